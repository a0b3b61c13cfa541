//! What polars doing margin's grouping would cost: the per-cell aggregates margin's statistics start
//! from, computed by one polars lazy query over a store's column cache
//! (`runs.columns/`), grouped by the integer cell code, timed beside the whole report.
//!
//! ```text
//! cargo run --release --example polars_grouping -- STORE [RUNS]
//! ```
//!
//! STORE is a store folder whose `runs.columns/` a `margin report` wrote (e.g. the one
//! `bench/compare.sh` makes with `examples/synthetic_store.rs`). The query reads the
//! metric and trial tables (the columns a report reads), keeps the measured trials (status
//! `ok`, no warm-up), joins each value to its trial's cell, and per cell × metric gives:
//! n, sum, mean, standard deviation, median, MAD (the median of the absolute deviations
//! from the cell's median), min and max, and the number of sessions. It prints the
//! wall time of each of RUNS runs (default 5), the number of groups, and a checksum of
//! the aggregates (so that no part of the query is optimised away). It does not replace
//! margin's grouping: margin's rules (outliers, regimes, drift, the intervals of a ratio)
//! need each cell's values, not only these aggregates; this measures whether polars
//! could even produce the aggregates within the report's budget.

use std::time::Instant;

use polars::prelude::*;

fn main() -> PolarsResult<()> {
    let mut args = std::env::args().skip(1);
    let store = args.next().expect("usage: polars_grouping STORE [RUNS]");
    let runs: usize = args.next().map_or(5, |r| r.parse().expect("RUNS: a number"));
    let columns = format!("{store}/runs.columns");
    for run in 1..=runs {
        let start = Instant::now();
        let metrics = LazyFrame::scan_parquet(
            PlRefPath::new(format!("{columns}/metrics/*.parquet")),
            ScanArgsParquet::default(),
        )?
        .select([col("trial"), col("metric").to_physical(), col("value")]);
        let trials = LazyFrame::scan_parquet(
            PlRefPath::new(format!("{columns}/trials/*.parquet")),
            ScanArgsParquet::default(),
        )?
        .filter(col("status").to_physical().eq(lit(0u32)).and(col("warmup").not()))
        .select([col("trial"), col("cell").to_physical(), col("session").to_physical()]);
        // |value − its cell's median| (`abs` is a polars feature margin does not build)
        let from_median = col("value") - col("value").median().over([col("cell"), col("metric")])?;
        let deviation = when(from_median.clone().lt(lit(0.0)))
            .then(lit(0.0) - from_median.clone())
            .otherwise(from_median);
        let out = metrics
            .join(trials, [col("trial")], [col("trial")], JoinArgs::new(JoinType::Inner))
            .with_column(deviation.alias("deviation"))
            .group_by([col("cell"), col("metric")])
            .agg([
                len().alias("n"),
                col("value").sum().alias("sum"),
                col("value").mean().alias("mean"),
                col("value").std(1).alias("sd"),
                col("value").median().alias("median"),
                col("deviation").median().alias("mad"),
                col("value").min().alias("min"),
                col("value").max().alias("max"),
                col("session").n_unique().alias("sessions"),
            ])
            .collect()?;
        let seconds = start.elapsed().as_secs_f64();
        let checksum: f64 = ["sum", "sd", "median", "mad"]
            .iter()
            .map(|c| out.column(c).and_then(|s| s.as_materialized_series().sum::<f64>()).unwrap_or(f64::NAN))
            .sum();
        println!("run {run}: {seconds:.3} s, {} groups, checksum {checksum:.6e}", out.height());
    }
    Ok(())
}
