//! The scenarios of the calibration suite: how trials vary, how many there are, how they
//! are grouped, and the experiment file each one is analysed with.

use serde::Serialize;

use vocab::{MeanKind, Method};

/// How one trial's value varies around its cell's centre.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    Normal,
    /// Log-normal with the given mean and CV (skewed to the right).
    LogNormal,
    /// Student's t with 3 degrees of freedom, scaled to the given sd (t₃ has variance 3).
    StudentT3,
    /// Normal; in `share` of the cells one trial is moved 3–10 sd away, up or down with
    /// equal chance (so the truth is unchanged).
    Contaminated {
        share: f64,
    },
    /// Normal, rounded to whole numbers, as bonnie++ and iozone print them.
    Quantised,
}

impl Shape {
    pub fn label(&self) -> &'static str {
        match self {
            Shape::Normal => "normal",
            Shape::LogNormal => "log-normal",
            Shape::StudentT3 => "t(3)",
            Shape::Contaminated { .. } => "contaminated",
            Shape::Quantised => "quantised",
        }
    }
}

/// How many trials each cell gets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrialsPerCell {
    /// This many per cell (with sessions: per session).
    Fixed { n: u32 },
    /// `repetitions: { min, max, target }`, decided by the runner's own rule.
    Adaptive { min: u32, max: u32, target: f64 },
    /// `repetitions: { min, max, until: verdict }`: the cells stop once the comparison is
    /// resolved, by the runner's own rule.
    Verdict { min: u32, max: u32 },
    /// `boots: { min, max, until: verdict }` on the sessions of [`Layout::Sessions`]:
    /// `per_boot` trials a cell in each boot of the first `min` blocks, then the trials
    /// per boot the runner's rule decides (a boot costing `cost` trials), blocks until the
    /// comparison across boots is settled at a look, or more boots cannot settle it
    /// (when `futility` is the factor the runner stops at), or `max`.
    Boots { per_boot: u32, min: u32, max: u32, cost: f64, futility: Option<f64> },
}

/// How the two levels' trials relate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Layout {
    /// One cell per level.
    Independent,
    /// `paired_by: block`: `blocks` blocks (benchmark cores, block sizes) whose true
    /// centres differ widely (log-normal, sd 0.3 of the log), both levels in each.
    Paired { blocks: u32 },
    /// The compared factor is an environment factor (a kernel, a boot): each level's
    /// trials come from its own `per_level` sessions, which the levels do not share. Each
    /// session shifts its trials' centre by a normal offset with sd `between` × the
    /// within-session sd. With `blocks` > 0, paired by a block factor as [`Layout::Paired`],
    /// every session running every block.
    Sessions { per_level: u32, between: f64, blocks: u32 },
}

/// How outliers are handled: margin's default rule, or `outliers: { method: none }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutlierSetting {
    Default,
    None,
}

/// One simulated situation. The truth is set per experiment: the compared level's mean
/// is the baseline's times the true ratio (a rate's harmonic mean, for a harmonic metric).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// Unique; what `--scenario` matches.
    pub name: String,
    /// The row group in the table.
    pub group: &'static str,
    pub trials: TrialsPerCell,
    /// Within-cell coefficient of variation, a fraction.
    pub cv: f64,
    pub shape: Shape,
    pub layout: Layout,
    /// Arithmetic: a cost in seconds (lower is better), centre 10 s. Harmonic: a rate
    /// over a fixed amount of work (MB/s, higher is better): the time per run varies
    /// with the shape around 1 s, and the rate is 100 MB / time.
    pub mean: MeanKind,
    pub outliers: OutlierSetting,
    /// The baseline's true centre (a cost, or the time of a rate's work).
    pub centre: f64,
    /// `analysis.method`: the parametric default, or `robust`.
    pub method: Method,
}

impl Scenario {
    fn base(name: impl Into<String>, group: &'static str) -> Scenario {
        Scenario {
            name: name.into(),
            group,
            trials: TrialsPerCell::Fixed { n: 5 },
            cv: 0.05,
            shape: Shape::Normal,
            layout: Layout::Independent,
            mean: MeanKind::Arithmetic,
            outliers: OutlierSetting::Default,
            centre: 10.0,
            method: Method::Parametric,
        }
    }

    fn n(mut self, n: u32) -> Self {
        self.trials = TrialsPerCell::Fixed { n };
        self
    }

    fn cv(mut self, cv: f64) -> Self {
        self.cv = cv;
        self
    }

    fn shape(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// The same scenario with `outliers: none`, named `<name>-none`.
    fn without_outlier_rule(&self) -> Self {
        Scenario { name: format!("{}-none", self.name), outliers: OutlierSetting::None, ..self.clone() }
    }

    /// What the scenario is, in words.
    pub fn describe(&self) -> String {
        let trials = match (self.trials, self.layout) {
            (TrialsPerCell::Fixed { n }, Layout::Sessions { per_level, blocks: 0, .. }) => {
                format!("{per_level} session(s) × {n} trials per level")
            }
            (TrialsPerCell::Fixed { n }, Layout::Sessions { per_level, blocks, .. }) => {
                format!("{per_level} session(s) × {blocks} blocks × {n} trials per level")
            }
            (TrialsPerCell::Fixed { n }, Layout::Paired { blocks }) => {
                format!("{blocks} blocks × {n} trials per level")
            }
            (TrialsPerCell::Fixed { n }, Layout::Independent) => format!("{n} trials per level"),
            (TrialsPerCell::Adaptive { min, max, target }, _) => {
                format!("adaptive {{ min: {min}, max: {max}, target: {}% }}", fmt_pct(target))
            }
            (TrialsPerCell::Verdict { min, max }, _) => {
                format!("{{ min: {min}, max: {max}, until: verdict }}")
            }
            (TrialsPerCell::Boots { per_boot, min, max, cost, futility }, _) => format!(
                "boots {{ min: {min}, max: {max}, until: verdict }}, {per_boot} trials a boot at first, a boot \
                 costing {cost} trials, {}",
                match futility {
                    Some(f) => format!("stopping for futility at {f} × max"),
                    None => "no stop for futility".to_owned(),
                }
            ),
        };
        let mut words = vec![trials, format!("CV {} %", fmt_pct(self.cv)), self.shape.label().to_owned()];
        match self.layout {
            Layout::Paired { .. } => words.push("paired".to_owned()),
            Layout::Sessions { between, blocks, .. } => {
                if blocks > 0 {
                    words.push("paired".to_owned());
                }
                words.push(format!("between-session sd {between} × within"));
            }
            Layout::Independent => {}
        }
        if self.mean == MeanKind::Harmonic {
            words.push("rate, harmonic mean".to_owned());
        }
        if self.shape == Shape::Quantised {
            words.push(format!("around {}", self.centre));
        }
        words.push(match (self.method, self.outliers) {
            (Method::Robust, _) => "method: robust (every value)".to_owned(),
            (_, OutlierSetting::Default) => "default outlier rule".to_owned(),
            (_, OutlierSetting::None) => "outliers: none".to_owned(),
        });
        words.join(", ")
    }

    /// The name of the compared factor.
    pub fn factor(&self) -> &'static str {
        match self.layout {
            Layout::Sessions { .. } => "kernel",
            _ => "v",
        }
    }

    /// The levels of the paired factor, if any.
    pub fn blocks(&self) -> Vec<String> {
        match self.layout {
            Layout::Paired { blocks } | Layout::Sessions { blocks, .. } => {
                (1..=blocks).map(|b| format!("p{b}")).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The experiment file the scenario's stores are analysed with: margin's defaults but
    /// for what the scenario sets.
    pub fn yaml(&self) -> String {
        let factor = self.factor();
        let mut y = String::from("name: calibrate\nmatrix:\n");
        y.push_str(&format!("  {factor}: [a, b]\n"));
        let blocks = self.blocks();
        if !blocks.is_empty() {
            y.push_str(&format!("  block: [{}]\n", blocks.join(", ")));
        }
        if let TrialsPerCell::Boots { .. } = self.trials {
            // the booted host of the cells, as in a real experiment
            y.push_str("  host: [sim]\n");
        }
        if let Layout::Sessions { .. } = self.layout {
            // detected from the session's facts, as a kernel or hypervisor is
            y.push_str(&format!("environment:\n  {factor}: {{ fact: kernel }}\n"));
        }
        y.push_str("run: \"true\"\nmetrics:\n");
        let (unit, better, mean) = self.metric();
        let mean = match mean {
            MeanKind::Arithmetic => "arithmetic",
            MeanKind::Harmonic => "harmonic",
        };
        let better = match better {
            vocab::Better::Lower => "lower",
            vocab::Better::Higher => "higher",
        };
        y.push_str(&format!(
            "  value: {{ regex: '([0-9.]+)', unit: {unit}, better: {better}, mean: {mean} }}\n"
        ));
        match self.trials {
            TrialsPerCell::Fixed { n } => y.push_str(&format!("repetitions: {n}\n")),
            TrialsPerCell::Adaptive { min, max, target } => y.push_str(&format!(
                "repetitions: {{ min: {min}, max: {max}, target: {}% }}\n",
                fmt_pct(target)
            )),
            TrialsPerCell::Verdict { min, max } => {
                y.push_str(&format!("repetitions: {{ min: {min}, max: {max}, until: verdict }}\n"))
            }
            TrialsPerCell::Boots { per_boot, min, max, .. } => {
                // the runner's: the repetitions shared over the first `min` boots, the
                // looks' α/K from the host's `boots:`
                y.push_str(&format!("repetitions: {}\n", per_boot * min));
                y.push_str(&format!(
                    "hosts:\n  sim: {{ ssh: sim.example, boot: {{ restart: 'true', boots: {{ min: {min}, max: {max}, until: verdict }} }} }}\n"
                ));
            }
        }
        y.push_str("analysis:\n");
        if self.method == Method::Robust {
            y.push_str("  method: robust\n");
        }
        if self.outliers == OutlierSetting::None {
            y.push_str("  outliers: { method: none }\n");
        }
        let paired = if blocks.is_empty() { "" } else { ", paired_by: block" };
        y.push_str(&format!("  compare:\n    - {{ factor: {factor}, baseline: a{paired} }}\n"));
        y
    }

    /// Unit, direction and mean of the simulated metric.
    pub fn metric(&self) -> (&'static str, vocab::Better, MeanKind) {
        match self.mean {
            MeanKind::Arithmetic => ("s", vocab::Better::Lower, MeanKind::Arithmetic),
            MeanKind::Harmonic => ("MB/s", vocab::Better::Higher, MeanKind::Harmonic),
        }
    }
}

/// A fraction as a percentage without trailing zeros: 0.005 → "0.5", 0.02 → "2".
pub fn fmt_pct(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The adaptive rule of the issue and of docs/experiment-file.md's example.
pub const ADAPTIVE: TrialsPerCell = TrialsPerCell::Adaptive { min: 5, max: 30, target: 0.02 };
/// Stopping on the answer, with the same bounds.
pub const UNTIL_VERDICT: TrialsPerCell = TrialsPerCell::Verdict { min: 5, max: 30 };
/// The fixed n per level that gives about the power of [`UNTIL_VERDICT`] at a true
/// +10 % (δ = 5 %), at CV 2 % and 5 % (measured: docs/statistics.md).
pub const FIXED_LIKE_VERDICT: [(f64, &str, u32); 2] = [(0.02, "2", 7), (0.05, "5", 20)];

/// Every scenario of the suite, in table order.
pub fn all() -> Vec<Scenario> {
    let mut out = Vec::new();
    let push_both = |out: &mut Vec<Scenario>, s: Scenario| {
        let none = s.without_outlier_rule();
        out.push(s);
        out.push(none);
    };

    // Trials per level: normal, CV 5 %, with the default outlier rule and without one.
    for n in [3, 5, 10, 30] {
        push_both(&mut out, Scenario::base(format!("n{n}-cv5-normal"), "trials per level").n(n));
    }
    // Spread: 5 trials, normal.
    for (cv, name) in [(0.005, "0.5"), (0.02, "2"), (0.20, "20")] {
        out.push(Scenario::base(format!("n5-cv{name}-normal"), "spread").cv(cv));
    }
    // Shapes: 5 and 10 trials, CV 5 %.
    for n in [5, 10] {
        out.push(Scenario::base(format!("n{n}-cv5-lognormal"), "distribution").n(n).shape(Shape::LogNormal));
        push_both(
            &mut out,
            Scenario::base(format!("n{n}-cv5-t3"), "distribution").n(n).shape(Shape::StudentT3),
        );
        push_both(
            &mut out,
            Scenario::base(format!("n{n}-cv5-contaminated"), "distribution")
                .n(n)
                .shape(Shape::Contaminated { share: 0.10 }),
        );
        // bonnie++-like integers around 100 with a spread of one unit: the MAD is often 0
        let quantised = Scenario {
            centre: 100.0,
            ..Scenario::base(format!("n{n}-cv1-quantised100"), "distribution")
                .n(n)
                .cv(0.01)
                .shape(Shape::Quantised)
        };
        push_both(&mut out, quantised);
    }
    // Contamination at 30 trials, where the calibrated rule has the power to find it.
    push_both(
        &mut out,
        Scenario::base("n30-cv5-contaminated", "distribution")
            .n(30)
            .shape(Shape::Contaminated { share: 0.10 }),
    );
    // Paired by a block factor of six levels.
    for n in [3, 5] {
        let paired = Scenario {
            layout: Layout::Paired { blocks: 6 },
            ..Scenario::base(format!("paired6-n{n}-cv5"), "paired").n(n)
        };
        push_both(&mut out, paired);
    }
    // Rates with a harmonic mean.
    for n in [5, 10] {
        let rate = Scenario {
            mean: MeanKind::Harmonic,
            centre: 1.0,
            ..Scenario::base(format!("rate-n{n}-cv5-normal"), "harmonic mean").n(n)
        };
        push_both(&mut out, rate);
    }
    out.push(Scenario {
        mean: MeanKind::Harmonic,
        centre: 1.0,
        ..Scenario::base("rate-n5-cv5-lognormal", "harmonic mean").shape(Shape::LogNormal)
    });
    // Sessions: the compared level is an environment factor; 5 trials per session.
    for between in [0.0, 0.5, 1.0, 2.0] {
        for per_level in 1..=4 {
            out.push(Scenario {
                layout: Layout::Sessions { per_level, between, blocks: 0 },
                ..Scenario::base(format!("sessions{per_level}x5-between{between:.1}"), "sessions").n(5)
            });
        }
    }
    // Paired by six blocks, each level in its own 2 or 3 sessions that run every block:
    // the sessions, not the pairs, are the unit.
    for between in [0.0, 1.0] {
        for per_level in [2, 3] {
            out.push(Scenario {
                layout: Layout::Sessions { per_level, between, blocks: 6 },
                ..Scenario::base(format!("paired6-sessions{per_level}x3-between{between:.1}"), "sessions")
                    .n(3)
            });
        }
    }
    // Adaptive stopping, {min 5, max 30, target 2 %}.
    for (cv, name) in [(0.005, "0.5"), (0.01, "1"), (0.02, "2"), (0.05, "5")] {
        push_both(
            &mut out,
            Scenario {
                trials: ADAPTIVE,
                ..Scenario::base(format!("adaptive-cv{name}-normal"), "adaptive").cv(cv)
            },
        );
    }
    // Stopping on the answer, { min 5, max 30, until: verdict }, and the fixed n of about
    // the same power at a true +10 %.
    for (cv, name, n) in FIXED_LIKE_VERDICT {
        out.push(Scenario {
            trials: UNTIL_VERDICT,
            ..Scenario::base(format!("verdict-cv{name}-normal"), "until verdict").cv(cv)
        });
        out.push(Scenario::base(format!("verdict-fixed-n{n}-cv{name}-normal"), "until verdict").n(n).cv(cv));
    }
    // Adaptive boots, { min 3, max 12, until: verdict }, 5 trials a boot at first, a boot
    // costing 10 trials (a 60 s reboot against 6 s trials), boots that differ by 0–2 ×
    // the trials' sd.
    // With the runner's stop for futility, and without it.
    for between in [0.0, 0.5, 1.0, 2.0] {
        for (trials, suffix) in [(ADAPTIVE_BOOTS, ""), (ADAPTIVE_BOOTS_TO_MAX, "-to-max")] {
            out.push(Scenario {
                trials,
                layout: Layout::Sessions { per_level: 3, between, blocks: 0 },
                ..Scenario::base(format!("boots3-12-between{between:.1}{suffix}"), "adaptive boots")
            });
        }
    }
    out.extend(robust());
    out
}

/// The adaptive boots of the suite, as the runner does them.
pub const ADAPTIVE_BOOTS: TrialsPerCell = TrialsPerCell::Boots {
    per_boot: 5,
    min: 3,
    max: 12,
    cost: 10.0,
    futility: Some(crate::analyze::boot_rule::FUTILITY_FACTOR),
};
/// The same, booting on to `max` however far the boots needed are beyond it.
pub const ADAPTIVE_BOOTS_TO_MAX: TrialsPerCell =
    TrialsPerCell::Boots { per_boot: 5, min: 3, max: 12, cost: 10.0, futility: None };

/// The robust method (`analysis: { method: robust }`, docs/statistics.md, The robust
/// method) on each shape at 5, 10 and 30 trials per level, and paired by six blocks: its
/// rows beside the parametric rows above measure what it costs and what it buys.
fn robust() -> Vec<Scenario> {
    let mut out = Vec::new();
    let robust = |s: Scenario| Scenario { name: format!("robust-{}", s.name), method: Method::Robust, ..s };
    for n in [5, 10, 30] {
        let base = |shape: &str| Scenario::base(format!("n{n}-cv5-{shape}"), "robust method").n(n);
        out.push(robust(base("normal")));
        out.push(robust(base("lognormal").shape(Shape::LogNormal)));
        out.push(robust(base("t3").shape(Shape::StudentT3)));
        out.push(robust(base("contaminated").shape(Shape::Contaminated { share: 0.10 })));
        out.push(robust(Scenario {
            centre: 100.0,
            ..Scenario::base(format!("n{n}-cv1-quantised100"), "robust method")
                .n(n)
                .cv(0.01)
                .shape(Shape::Quantised)
        }));
    }
    for n in [3, 5] {
        out.push(robust(Scenario {
            layout: Layout::Paired { blocks: 6 },
            ..Scenario::base(format!("paired6-n{n}-cv5"), "robust method").n(n)
        }));
    }
    out.push(robust(Scenario {
        mean: MeanKind::Harmonic,
        centre: 1.0,
        ..Scenario::base("rate-n10-cv5-normal", "robust method").n(10)
    }));
    out
}
