//! `hosts.NAME.boot:`: the boot recipe's types, and its checks (what the types cannot say).

use serde::Deserialize;

use super::validate::Checker;
use super::{Located, RepetitionsSpec, look_schedule, parse_duration};
use crate::diag::{excerpt, suggest};
use vocab::Scalar;

/// A host's boot recipe: the commands that reboot it into the levels of the environment
/// factors, rendered from those levels, and how long it may take to come back.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    /// Run on the host over ssh first, to choose the next boot (`grub-reboot '…'`).
    pub select: Option<Located<String>>,
    /// The reboot, run on the host over ssh; default `reboot` unless `restart` is given.
    pub reboot: Option<Located<String>>,
    /// Instead of `reboot`, a command run on the machine margin runs on (a BMC's
    /// `ipmitool`, a VM restarted with another kernel).
    pub restart: Option<Located<String>>,
    /// Run on the machine margin runs on when the host does not come back in `timeout`;
    /// margin then waits `timeout` once more.
    pub power_cycle: Option<Located<String>>,
    /// The host that boots this one — a guest's dom0 (`xl create` with a config rendered
    /// from the levels): `restart` and `power_cycle` run there, over ssh, instead of on
    /// the machine margin runs on. A key of `hosts:`.
    pub by: Option<Located<String>>,
    /// From the reboot command to ssh answering in a new boot (default 10m).
    pub timeout: Option<Located<Scalar>>,
    /// Boots of each combination of the environment's levels over the run (default 3),
    /// or `{ min, max, until: verdict }`: blocks of boots until the comparisons across
    /// boots are settled (docs/statistics.md, Adaptive boots).
    pub boots: Option<Located<BootsSpec>>,
    /// Failed boots (not back, or back in other levels) before the host's remaining
    /// cells are left pending (default 3).
    pub max_failed: Option<Located<u32>>,
}

/// `boots:` as written: `6`, or `{ min: 3, max: 12, until: verdict }` (validation
/// checks `until` and the bounds).
#[derive(Debug, Clone, PartialEq)]
pub enum BootsSpec {
    Fixed(u32),
    Adaptive { min: u32, max: u32, until: Option<Located<Scalar>> },
}

/// Boots of each combination of levels when the recipe does not say (`boots:`).
pub const DEFAULT_BOOTS: u32 = 3;

/// How many boots of each combination of levels a host gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boots {
    Fixed(u32),
    /// Blocks of boots (every combination once each) until every comparison across the
    /// boots is resolved at a look, or `max` blocks: looked at on
    /// [`look_schedule`]`(min, max)`, the intervals at 1 − α/K.
    UntilVerdict {
        min: u32,
        max: u32,
    },
}

impl Boots {
    /// The most boots of each combination.
    pub fn most(&self) -> u32 {
        match *self {
            Boots::Fixed(n) => n,
            Boots::UntilVerdict { max, .. } => max,
        }
    }

    /// The block counts at which the comparisons are looked at (empty when fixed).
    pub fn looks(&self) -> Vec<u32> {
        match *self {
            Boots::Fixed(_) => Vec::new(),
            Boots::UntilVerdict { min, max } => look_schedule(min, max),
        }
    }
}

impl Boot {
    /// How many boots: `boots:`, else [`DEFAULT_BOOTS`].
    pub fn count(&self) -> Boots {
        match self.boots.as_ref().map(|b| &b.value) {
            None => Boots::Fixed(DEFAULT_BOOTS),
            Some(BootsSpec::Fixed(n)) => Boots::Fixed(*n),
            Some(BootsSpec::Adaptive { min, max, .. }) => Boots::UntilVerdict { min: *min, max: *max },
        }
    }

    /// Its command templates with their key names.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &Located<String>)> {
        [
            ("select", self.select.as_ref()),
            ("reboot", self.reboot.as_ref()),
            ("restart", self.restart.as_ref()),
            ("power_cycle", self.power_cycle.as_ref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
    }
}

/// The names a boot command may use beside the environment factors: the host's name and
/// the boot's number in the plan.
pub(super) const BOOT_VARIABLES: &[&str] = &["host", "boot"];

impl Checker<'_> {
    /// Every `boot:` of `hosts:`: on an ssh host, with environment factors to choose,
    /// one way to reboot, templates over those factors, a duration and counts that make
    /// sense.
    pub(super) fn boots(&mut self) {
        let exp = self.exp;
        let mut defined: Vec<String> = exp.spec.environment.keys().map(|k| k.value.clone()).collect();
        defined.extend(BOOT_VARIABLES.iter().map(|s| s.to_string()));
        for (name, host) in &exp.spec.hosts {
            let Some(boot) = &host.value.boot else { continue };
            let host_name = excerpt(&name.value);
            if host.value.ssh.is_none() {
                self.error_hint(
                    boot.pos,
                    format!(
                        "host `{host_name}` has `boot:` but no `ssh:`: margin never reboots the machine it runs on"
                    ),
                    Some(format!(
                        "run margin on another machine and reach this one over ssh: \
                         `hosts: {{ {host_name}: {{ ssh: root@machine, boot: … }} }}`"
                    )),
                );
            }
            if exp.spec.environment.is_empty() {
                self.error_hint(
                    boot.pos,
                    format!(
                        "host `{host_name}`: `boot:` reboots into levels of the environment factors, and `environment:` declares none"
                    ),
                    Some("declare the factor the boot changes, e.g. `environment: { kernel: { fact: hypervisor, map: { xen: xen, none: bare } } }`".into()),
                );
            }
            let b = &boot.value;
            if let (Some(_), Some(restart)) = (&b.reboot, &b.restart) {
                self.error_hint(
                    restart.pos,
                    format!("host `{host_name}`: `boot:` has both `reboot` (on the host) and `restart` (on this machine)"),
                    Some("keep one: `reboot` runs over ssh on the host, `restart` here (a BMC, a VM)".into()),
                );
            }
            if let Some(by) = &b.by {
                self.boot_by(&name.value, b, by);
            }
            if let Some(t) = &b.timeout
                && let Err(e) = parse_duration(&t.value)
            {
                self.error(t.pos, format!("host `{host_name}`: boot timeout: {e}"));
            }
            if let Some(n) = &b.max_failed
                && n.value == 0
            {
                self.error(n.pos, format!("host `{host_name}`: boot `max_failed` must be 1 or more"));
            }
            if let Some(boots) = &b.boots {
                self.boot_count(&host_name, boots);
            }
            for (key, t) in b.commands() {
                self.template(&format!("hosts.{}.boot.{key}", name.value), t, &defined);
            }
        }
    }

    /// `by:`: another key of `hosts:`, not rebooted by a plan of its own, and a `restart`
    /// for it to run.
    fn boot_by(&mut self, host: &str, b: &super::Boot, by: &Located<String>) {
        let exp = self.exp;
        let host_name = excerpt(host);
        let Some(controller) = exp.spec.hosts.iter().find(|(k, _)| k.value == by.value) else {
            let hint =
                suggest(&by.value, exp.spec.hosts.keys().map(|k| k.value.as_str()).filter(|k| *k != host));
            self.error_hint(
                by.pos,
                format!("host `{host_name}`: boot `by: {}` is not a key of `hosts:`", excerpt(&by.value)),
                Some(hint.unwrap_or_else(|| {
                    "name the host that boots this one (its dom0), declared under `hosts:` with its `ssh:`".into()
                })),
            );
            return;
        };
        if by.value == host {
            self.error_hint(
                by.pos,
                format!("host `{host_name}`: boot `by:` names the host itself"),
                Some("`by:` is another host that boots this one (a guest's dom0); a host that reboots itself uses `reboot`".into()),
            );
        } else if controller.1.value.boot.is_some() {
            self.error_hint(
                by.pos,
                format!(
                    "host `{host_name}`: boot `by: {}` names a host that is itself rebooted by the plan",
                    excerpt(&by.value)
                ),
                Some("boot the guest from a host that stays up: its dom0 without `boot:`, or margin's machine (`restart` without `by`)".into()),
            );
        }
        if b.restart.is_none() {
            self.error_hint(
                by.pos,
                format!(
                    "host `{host_name}`: boot `by: {}` runs `restart` there, and `boot:` has none",
                    excerpt(&by.value)
                ),
                Some("e.g. `restart: \"xl destroy guest1; xl create /etc/xen/guest1.cfg 'vcpus={{ vcpus }}'\"`".into()),
            );
        }
    }

    /// `boots:`: a count of 1 or more, or `{ min, max, until: verdict }` with 2 ≤ min ≤
    /// max, and not beside `repetitions: { until: verdict }`.
    fn boot_count(&mut self, host_name: &str, boots: &Located<BootsSpec>) {
        const UNREPLICATED: &str =
            "one boot per level is unreplicated; 3 or more let the report compare boots";
        match &boots.value {
            BootsSpec::Fixed(0) => self.error_hint(
                boots.pos,
                format!("host `{host_name}`: boot `boots` must be 1 or more"),
                Some(UNREPLICATED.into()),
            ),
            BootsSpec::Fixed(_) => {}
            BootsSpec::Adaptive { min, max, until } => {
                match until {
                    None => self.error_hint(
                        boots.pos,
                        format!("host `{host_name}`: adaptive `boots` need `until: verdict`"),
                        Some("write `boots: { min: 3, max: 12, until: verdict }`, or a number of boots".into()),
                    ),
                    Some(u) if u.value.text != "verdict" => self.error_hint(
                        u.pos,
                        format!(
                            "host `{host_name}`: boots: until: expected `verdict`, found `{}`",
                            excerpt(&u.value.text)
                        ),
                        Some("`until: verdict` boots each level again until the comparisons across boots are settled".into()),
                    ),
                    Some(_) => {}
                }
                if *min < 2 {
                    self.error_hint(
                        boots.pos,
                        format!("host `{host_name}`: adaptive boots need `min: 2` or more, found {min}"),
                        Some(format!("{UNREPLICATED}: the first look needs how much boots differ")),
                    );
                } else if min > max {
                    self.error(
                        boots.pos,
                        format!("host `{host_name}`: boots: `min` ({min}) is above `max` ({max})"),
                    );
                }
                if let Some(r) = &self.exp.spec.repetitions
                    && let RepetitionsSpec::Adaptive { until: Some(_), .. } = r.value
                {
                    self.error_hint(
                        r.pos,
                        format!(
                            "`repetitions: {{ until: verdict }}` and host `{host_name}`'s `boots: {{ until: verdict }}` both stop on the answer"
                        ),
                        Some(
                            "across boots the boots decide: give `repetitions` a number (the trials of each cell over the first `min` boots) \
                             and keep `until: verdict` on `boots`"
                                .into(),
                        ),
                    );
                }
            }
        }
    }
}
