//! The boot plan: which environment levels each boot of a host gets, in a seeded random
//! order balanced in blocks, so that every combination's boots spread over the whole run
//! (never all xen first, then all bare).

use indexmap::IndexMap;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use minijinja::value::Value;

use super::{Plan, host_level};
use crate::spec::{Boot, Experiment};
use template::{Context, Templates};

pub use crate::spec::DEFAULT_BOOTS;

/// One host's boots, in the order they run.
#[derive(Debug, Clone, PartialEq)]
pub struct BootPlan {
    pub host: String,
    pub seed: u64,
    /// The environment factors' levels of each boot, from the first.
    pub boots: Vec<IndexMap<String, String>>,
}

impl BootPlan {
    /// How many boots of the levels of boot `index` (from 0) there are from it on, itself
    /// included: what its cells' remaining trials are shared over.
    pub fn left_from(&self, index: usize) -> u32 {
        let wanted = &self.boots[index];
        self.boots[index..].iter().filter(|b| *b == wanted).count() as u32
    }
}

/// The hosts with a boot recipe that some cell of the plan runs on, in the order of the
/// `hosts:` entries.
pub fn booted_hosts(exp: &Experiment, plan: &Plan) -> Vec<String> {
    exp.spec
        .hosts
        .iter()
        .filter(|(_, h)| h.value.boot.is_some() && h.value.ssh.is_some())
        .map(|(name, _)| name.value.clone())
        .filter(|name| plan.cells.iter().any(|c| host_level(plan, c) == Some(name.as_str())))
        .collect()
}

/// The environment levels of each combination the host's cells need, in the order the
/// plan first has them.
pub fn combinations(exp: &Experiment, plan: &Plan, host: &str) -> Vec<IndexMap<String, String>> {
    let factors: Vec<&str> = exp.spec.environment.keys().map(|k| k.value.as_str()).collect();
    let mut out: Vec<IndexMap<String, String>> = Vec::new();
    for cell in plan.cells.iter().filter(|c| host_level(plan, c) == Some(host)) {
        let levels: IndexMap<String, String> = plan
            .levels(cell)
            .filter(|(k, _)| factors.contains(k))
            .map(|(k, v)| (k.to_string(), v.text.clone()))
            .collect();
        if !out.contains(&levels) {
            out.push(levels);
        }
    }
    out
}

/// The boot plan of `host`: `boots` blocks, each with every combination once in an order
/// drawn from `seed` (randomised complete blocks: after any block every combination has
/// had as many boots, and no order is systematic — a rule against repeats at a block's
/// edge would make two levels alternate, a fixed order after the first block).
pub fn boot_plan(exp: &Experiment, plan: &Plan, host: &str, seed: u64) -> BootPlan {
    let combos = combinations(exp, plan, host);
    // adaptive boots: the plan of their most blocks, of which a look may keep the first
    let per = exp
        .spec
        .hosts
        .iter()
        .find(|(name, _)| name.value == host)
        .and_then(|(_, h)| h.value.boot.as_ref())
        .map_or(DEFAULT_BOOTS, |b| b.value.count().most());
    BootPlan { host: host.to_string(), seed, boots: blocks(&combos, per, seed) }
}

/// `per` blocks of `combos`, each shuffled by a generator seeded from `seed`.
pub fn blocks<T: Clone>(combos: &[T], per: u32, seed: u64) -> Vec<T> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut out: Vec<T> = Vec::with_capacity(combos.len() * per as usize);
    for _ in 0..per {
        let mut block: Vec<usize> = (0..combos.len()).collect();
        block.shuffle(&mut rng);
        out.extend(block.into_iter().map(|i| combos[i].clone()));
    }
    out
}

/// A boot recipe's command and the values it reads from its environment.
pub type RecipeCommand = (String, Vec<(String, String)>);

/// A recipe's commands for one boot.
#[derive(Debug, Default)]
pub struct Rendered {
    pub select: Option<RecipeCommand>,
    pub reboot: Option<RecipeCommand>,
    pub restart: Option<RecipeCommand>,
    pub power_cycle: Option<RecipeCommand>,
}

/// Render a recipe's commands over a boot's levels, `host` and `boot` (its number).
pub fn render_boot(
    recipe: &Boot,
    wanted: &IndexMap<String, String>,
    host: &str,
    number: u32,
) -> Result<Rendered, String> {
    let templates = Templates::new();
    let mut ctx = Context::new();
    for (k, v) in wanted {
        ctx.set(k, Value::from(v.as_str()));
    }
    ctx.set("host", Value::from(host));
    ctx.set("boot", Value::from(number));
    let mut out = Rendered::default();
    for (key, t) in recipe.commands() {
        let mut env = Vec::new();
        let text = templates
            .render_command(&t.value, &ctx, &mut env)
            .map_err(|e| format!("`boot.{key}` failed to render: {}", e.message))?;
        let slot = match key {
            "select" => &mut out.select,
            "reboot" => &mut out.reboot,
            "restart" => &mut out.restart,
            _ => &mut out.power_cycle,
        };
        *slot = Some((text, env));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::blocks;

    #[test]
    fn every_block_has_every_combination_once_in_an_order_drawn_from_the_seed() {
        for seed in 0..200 {
            let plan = blocks(&["xen", "bare", "kvm"], 6, seed);
            assert_eq!(plan.len(), 18);
            for block in plan.chunks(3) {
                let mut b = block.to_vec();
                b.sort_unstable();
                assert_eq!(b, ["bare", "kvm", "xen"], "seed {seed}: {plan:?}");
            }
        }
        // reproducible from the seed, and the seed matters
        assert_eq!(blocks(&["a", "b"], 8, 7), blocks(&["a", "b"], 8, 7));
        let orders: std::collections::HashSet<Vec<&str>> =
            (0..50).map(|s| blocks(&["a", "b"], 8, s)).collect();
        assert!(orders.len() > 1);
    }

    #[test]
    fn each_level_spreads_over_the_run() {
        // the mean position of each level's boots sits near the middle: balanced blocks
        // never put all of one level first
        for seed in 0..100 {
            let plan = blocks(&["xen", "bare"], 10, seed);
            let mean = |l: &str| {
                let p: Vec<usize> =
                    plan.iter().enumerate().filter(|(_, x)| **x == l).map(|(i, _)| i).collect();
                p.iter().sum::<usize>() as f64 / p.len() as f64
            };
            assert!((mean("xen") - mean("bare")).abs() <= 1.0, "seed {seed}: {plan:?}");
        }
    }
}
