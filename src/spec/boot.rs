//! `hosts.NAME.boot:` checked: what the types cannot say about a boot recipe.

use super::parse_duration;
use super::validate::Checker;
use crate::diag::excerpt;

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
            if let Some(t) = &b.timeout
                && let Err(e) = parse_duration(&t.value)
            {
                self.error(t.pos, format!("host `{host_name}`: boot timeout: {e}"));
            }
            for (key, n) in [("boots", &b.boots), ("max_failed", &b.max_failed)] {
                if let Some(n) = n
                    && n.value == 0
                {
                    self.error_hint(
                        n.pos,
                        format!("host `{host_name}`: boot `{key}` must be 1 or more"),
                        (key == "boots").then(|| {
                            "one boot per level is unreplicated; 3 or more let the report compare boots"
                                .into()
                        }),
                    );
                }
            }
            for (key, t) in b.commands() {
                self.template(&format!("hosts.{}.boot.{key}", name.value), t, &defined);
            }
        }
    }
}
