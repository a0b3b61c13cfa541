//! One boot of the plan: the recipe's commands (on the host, here, or on the `by:` host),
//! the wait for a new `boot_id`, and the check of the levels read back.

use super::*;
use crate::run::process::CaptureError;

impl Booting<'_> {
    /// One boot: the commands, the wait for a new boot, the check of its levels; each
    /// step logged before the next.
    pub(super) fn boot(
        &self,
        index: usize,
        attempt: u32,
        log: &mut Appender,
        interrupt: &AtomicBool,
        ui: &mut dyn Progress,
    ) -> Result<Booted, RunError> {
        let host = self.host;
        let wanted = &self.boots.boots[index];
        let number = index as u32 + 1;
        let record = |event: BootEvent| BootRecord {
            host: host.to_string(),
            boot: number,
            attempt,
            event,
            at: now(),
            seed: self.boots.seed,
            wanted: wanted.clone(),
            boot_id: None,
            detected: IndexMap::new(),
            ready_seconds: None,
            why: None,
            trials_per_boot: self.first_phase().filter(|&first| index >= first).and(self.per_boot.get()),
            bisect: self.bisect.clone(),
        };
        // said before the host is probed: a host still rebooting takes a while to answer
        // a bisection's boots are numbered among its own, with no end known
        let which = match self.bisect {
            Some(_) => format!("bisection boot {number}"),
            None => format!("boot {number} of {}", self.boots.boots.len()),
        };
        ui.note(&format!(
            "host `{host}`: {which} ({}){}",
            levels_text(wanted),
            if attempt > 1 { format!(", attempt {attempt}") } else { String::new() }
        ));
        let before = self.probe().ok();
        log.append(&record(BootEvent::Requested))?;
        let lost = |log: &mut Appender, why: String| -> Result<Booted, RunError> {
            log.append(&BootRecord { why: Some(why.clone()), ..record(BootEvent::Lost) })?;
            Ok(Booted::Failed(why))
        };
        let commands = match self.render(wanted, number) {
            Ok(c) => c,
            Err(why) => return lost(log, why),
        };
        let started = Instant::now();
        if let Some((select, env)) = &commands.select
            && let Err(why) = self.on_host(select, env)
        {
            return lost(log, format!("`select` failed: {why}"));
        }
        match &commands.restart {
            Some((restart, env)) => {
                if let Err(why) = self.on_controller(restart, env) {
                    return lost(log, format!("`restart` failed: {why}"));
                }
            }
            None => {
                let (reboot, env) =
                    commands.reboot.clone().unwrap_or_else(|| ("reboot".to_string(), Vec::new()));
                // the connection dropping under it is the reboot working (ssh's 255)
                if let Err(why) = self.on_host(&reboot, &env)
                    && !matches!(
                        why,
                        CaptureError::Failed { code: Some(255) | None, .. } | CaptureError::NoAnswer(_)
                    )
                {
                    return lost(log, format!("`reboot` failed: {why}"));
                }
            }
        }
        let mut back = self.wait_new_boot(before.as_deref(), started + self.timeout, interrupt);
        if let Waited::NotBack(why) = &back
            && let Some((cycle, env)) = &commands.power_cycle
        {
            ui.note(&format!(
                "host `{host}`: no new boot within {} ({why}); power cycle: {cycle}",
                jiff_like(self.timeout)
            ));
            if let Err(e) = self.on_controller(cycle, env) {
                return lost(
                    log,
                    format!("not back within {}, and `power_cycle` failed: {e}", jiff_like(self.timeout)),
                );
            }
            back = self.wait_new_boot(before.as_deref(), Instant::now() + self.timeout, interrupt);
        }
        let boot_id = match back {
            Waited::Interrupted => return Ok(Booted::Interrupted),
            Waited::NotBack(why) => {
                let cycled = if commands.power_cycle.is_some() { " (after the power cycle)" } else { "" };
                return lost(
                    log,
                    format!("no answer in a new boot within {}{cycled}: {why}", jiff_like(self.timeout)),
                );
            }
            Waited::Back(id) => id,
        };
        let ready = started.elapsed().as_secs_f64();
        let detected = self.detect();
        let wrong: Vec<String> = wanted
            .iter()
            .filter(|(k, v)| detected.levels.get(*k) != Some(*v))
            .map(|(k, v)| match detected.levels.get(k) {
                Some(got) => format!("booted {k}={got}, wanted {k}={v}"),
                None => format!(
                    "{k} not detected ({}), wanted {k}={v}",
                    detected.unknown.get(k).map_or("no value", String::as_str)
                ),
            })
            .collect();
        let mut r = record(if wrong.is_empty() { BootEvent::Verified } else { BootEvent::Rejected });
        r.boot_id = Some(boot_id);
        r.detected = detected.levels.clone();
        r.ready_seconds = Some((ready * 10.0).round() / 10.0);
        if wrong.is_empty() {
            log.append(&r)?;
            let which = if self.bisect.is_some() { "bisection boot" } else { "boot" };
            ui.note(&format!(
                "host `{host}`: {which} {number} back in {ready:.0} s, verified ({})",
                levels_text(wanted)
            ));
            Ok(Booted::Verified)
        } else {
            let why = format!("{}; no trial runs in it", wrong.join(", "));
            r.why = Some(why.clone());
            log.append(&r)?;
            Ok(Booted::Failed(why))
        }
    }

    /// The boot the host answers in: its `boot_id`, over a connection of its own.
    pub(super) fn probe(&self) -> Result<String, CaptureError> {
        let remote = format!("cat -- \"{}/proc/sys/kernel/random/boot_id\"", ssh::REMOTE_ROOT);
        let argv = ssh::oneshot_argv(self.entry, self.destination, &remote);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        crate::run::process::capture_argv(&argv, Path::new("."), Duration::from_secs(30))
    }

    /// Probe until the host answers in a boot other than `before`, or `deadline`.
    fn wait_new_boot(&self, before: Option<&str>, deadline: Instant, interrupt: &AtomicBool) -> Waited {
        loop {
            if interrupt.load(Ordering::SeqCst) {
                return Waited::Interrupted;
            }
            let last = match self.probe() {
                Ok(id) if Some(id.as_str()) != before => return Waited::Back(id),
                Ok(_) => "it still answers in the old boot".to_string(),
                Err(e) => format!("the last probe: {e}"),
            };
            if Instant::now() + POLL >= deadline {
                return Waited::NotBack(last);
            }
            std::thread::sleep(POLL);
        }
    }

    /// The host's facts and levels in its new boot, read as a session reads them.
    fn detect(&self) -> facts::Detected {
        let empty = || facts::Detected { levels: IndexMap::new(), unknown: IndexMap::new() };
        let Ok(control) = ControlDir::new() else { return empty() };
        let executor = crate::run::host::target(self.exp, self.store, self.host, Some(control.path()));
        let src = executor.facts();
        let found = facts::gather(src);
        let detected = facts::detect(self.exp, &found, src);
        executor.close();
        detected
    }

    /// Run `command` on the host, its values exported first.
    fn on_host(&self, command: &str, env: &[(String, String)]) -> Result<String, CaptureError> {
        over_ssh((self.entry, self.destination), command, env, ON_HOST)
    }

    /// Run `restart` or `power_cycle` where the recipe says: on the `by:` host over ssh,
    /// else on this machine; either may take the boot's timeout.
    fn on_controller(&self, command: &str, env: &[(String, String)]) -> Result<String, CaptureError> {
        match self.by {
            Some(by) => over_ssh(by, command, env, self.timeout),
            None => on_this_machine(command, env, self.timeout),
        }
    }

    /// The recipe's commands rendered for a boot into `wanted`.
    fn render(&self, wanted: &IndexMap<String, String>, number: u32) -> Result<Rendered, String> {
        render_boot(self.recipe, wanted, self.host, number)
    }
}

/// How waiting for a new boot ended.
enum Waited {
    Back(String),
    NotBack(String),
    Interrupted,
}

/// Run `command` on an ssh host, its values exported first.
fn over_ssh(
    (entry, destination): (&Host, &str),
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<String, CaptureError> {
    let mut script = String::new();
    for (k, v) in env {
        let v = shlex::try_quote(v).map(|q| q.into_owned()).unwrap_or_else(|_| "''".into());
        script.push_str(&format!("export {k}={v}; "));
    }
    script.push_str(command);
    let argv = ssh::oneshot_argv(entry, destination, &script);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    crate::run::process::run_argv(&argv, Path::new("."), timeout, &[])
}

/// Run `command` here, in the directory margin was started in (a recipe's relative paths
/// are the user's), its values in its environment.
fn on_this_machine(
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<String, CaptureError> {
    crate::run::process::run_argv(&["sh", "-c", command], Path::new("."), timeout, env)
}
