//! `margin import FILE --set f=v… [--host NAME] RAW…`: trials from outputs captured
//! elsewhere (another machine, an old run, a mailing-list post), parsed with the
//! experiment's parser and stored with their source and its hash; and
//! `margin import FILE --set host=GANG --member HOST=RAW…`: one trial of a gang, one
//! output per member, recorded as a gang's run records it (docs/experiment-file.md, gangs).

use std::io::Write;
use std::path::PathBuf;

use indexmap::IndexMap;

use super::args::Reports;
use super::{Error, load_all};
use crate::diag::suggest;
use crate::parse::Recipe;
use crate::run::import::{self, ImportError, Provenance};
use crate::spec::{Experiment, Gang};
use crate::store::Store;

/// `margin import`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The experiment file.
    pub file: PathBuf,
    /// The cell the outputs belong to, as `factor=level` (repeat for each factor).
    #[arg(long = "set", value_name = "FACTOR=LEVEL", required = true)]
    pub set: Vec<String>,
    /// The host the outputs come from (default: the cell's `host` level, else `imported`).
    #[arg(long, conflicts_with = "member")]
    pub host: Option<String>,
    /// For a gang's cell (`--set host=GANG`): one member's output of one trial the
    /// members ran at once, as `HOST=FILE`; give one per member.
    #[arg(long, value_name = "HOST=FILE", conflicts_with = "raw")]
    pub member: Vec<String>,
    /// When the outputs were measured, e.g. the "Run began" line of iozone: RFC 3339
    /// (`2006-11-23T18:25:53+01:00`) or `YYYY-MM-DD HH:MM:SS` (taken as UTC). Every
    /// trial of this import gets it. Without it the time is unknown (recorded as null,
    /// never the time of the import), and the report says so where time matters.
    #[arg(long, value_name = "TIME", value_parser = parse_started_at)]
    pub started_at: Option<jiff::Timestamp>,
    /// The boot the outputs were measured in, named as you like (`--boot bare-1`):
    /// imports naming the same boot are one boot in the analysis, as the sessions of a
    /// run in one `boot_id` are. Without it each import is a unit of its own, as if
    /// every output came from a boot of its own; a post that ran every figure of a
    /// kernel in one boot wants one name per kernel, so that its comparison across
    /// boots reads `unreplicated` rather than claiming what one boot cannot show.
    #[arg(long, value_name = "NAME", value_parser = parse_boot)]
    pub boot: Option<String>,
    /// The captured outputs; a file holding several results gives several trials.
    #[arg(required_unless_present = "member", value_name = "RAW")]
    pub raw: Vec<PathBuf>,
    #[command(flatten)]
    pub reports: Reports,
}

/// `--started-at`: an RFC 3339 time, or a civil `YYYY-MM-DD HH:MM:SS` (or with a `T`)
/// taken as UTC, since an old output rarely says its zone. A time in the future is a typo.
fn parse_started_at(text: &str) -> Result<jiff::Timestamp, String> {
    let text = text.trim();
    let expected = || {
        format!(
            "expected an RFC 3339 time (2006-11-23T18:25:53+01:00) or YYYY-MM-DD HH:MM:SS \
             (taken as UTC), found `{text}`"
        )
    };
    let time = match text.parse::<jiff::Timestamp>() {
        Ok(t) => t,
        // A civil date and time, no offset; a date alone is not a time of day.
        Err(_) if text.len() > 10 => text
            .parse::<jiff::civil::DateTime>()
            .and_then(|d| jiff::tz::TimeZone::UTC.to_timestamp(d))
            .map_err(|_| expected())?,
        Err(_) => return Err(expected()),
    };
    if time > jiff::Timestamp::now() {
        return Err(format!("`{text}` is in the future; when were the outputs measured?"));
    }
    Ok(time)
}

/// `--boot`: a name for the boot the outputs came from, one word of printable characters
/// (it is compared whole, so a space or a control character is more likely a mistake).
fn parse_boot(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "expected a name for the boot the outputs came from, one word (`bare-1`), found `{}`",
            text.escape_debug()
        ));
    }
    Ok(text.to_owned())
}

pub fn run(o: &ImportArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (exp, plan) = load_all(std::slice::from_ref(&o.file), usize::MAX)?.remove(0);
    let set: Vec<(String, String)> = o
        .set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(Error::Input(format!("--set {s}: write it as factor=level"))),
        })
        .collect::<Result<_, _>>()?;
    let cell = plan.find_cell(&set).map_err(|e| Error::Input(e.to_string()))?;
    let recipe = Recipe::from_spec(&exp.spec).map_err(|(metric, source)| Error::Recipe { metric, source })?;
    if !recipe.reads_output() {
        return Err(Error::Input(format!(
            "{}: the experiment has no `parse:` and no extractor, so an output gives no metric to import",
            exp.path.display()
        )));
    }
    let from = Provenance { started_at: o.started_at, boot: o.boot.clone() };
    let store = Store::new(&o.reports.root, &exp.name);
    let host_level = crate::plan::host_level(&plan, cell);
    let gang = host_level.and_then(|h| exp.spec.gang(h).map(|g| (h, g)));
    match (gang, o.member.is_empty()) {
        (Some((name, gang)), false) => {
            let members = member_files(&exp, name, gang, &o.member)?;
            Ok(import::gang::trial(&exp, &plan, cell, (name, gang), store, &from, &members, &recipe, out)?)
        }
        (Some((name, gang)), true) => {
            let members = gang.members();
            let usage: Vec<String> = members.iter().map(|m| format!("--member {m}=FILE")).collect();
            Err(Error::Input(format!(
                "{} is a cell of gang `{name}` (hosts {}): its trial is one output per member measured at \
                 once; give them as {}",
                plan.label(cell),
                members.join(", "),
                usage.join(" ")
            )))
        }
        (None, false) => Err(Error::Input(format!(
            "--member: {} is not a gang's cell (its host is {}); --member is for a level of `host` \
             that names a gang; give the outputs as files instead",
            plan.label(cell),
            host_level.map_or("not a factor".to_string(), |h| format!("`{h}`"))
        ))),
        (None, true) => {
            Ok(import::outputs(&exp, &plan, cell, store, &from, o.host.as_deref(), &o.raw, &recipe, out)?)
        }
    }
}

/// The `--member HOST=FILE` arguments checked against the gang (each member once, every
/// member given, no other host), in the gang's member order.
fn member_files(
    exp: &Experiment,
    gang_name: &str,
    gang: &Gang,
    members: &[String],
) -> Result<Vec<(String, PathBuf)>, Error> {
    let names = gang.members();
    let mut given: IndexMap<&str, PathBuf> = IndexMap::new();
    for arg in members {
        let Some((host, file)) = arg.split_once('=').map(|(h, f)| (h.trim(), f.trim())) else {
            return Err(Error::Input(format!(
                "--member {arg}: write it as host=file, e.g. --member {}=out.txt",
                names[0]
            )));
        };
        if !names.contains(&host) {
            let hosts: Vec<&str> = exp.spec.hosts.keys().map(|k| k.value.as_str()).collect();
            let why = if hosts.contains(&host) {
                format!("`{host}` is a host of the experiment but not a member of gang `{gang_name}`")
            } else {
                let hint =
                    suggest(host, names.iter().copied()).map(|h| format!(" ({h})")).unwrap_or_default();
                format!("`{host}` is not a member of gang `{gang_name}`{hint}")
            };
            return Err(Error::Input(format!(
                "--member {arg}: {why}; its members are: {}",
                names.join(", ")
            )));
        }
        if given.insert(host, PathBuf::from(file)).is_some() {
            return Err(Error::Input(format!(
                "--member {host}=…: given twice; a gang's trial takes one output per member"
            )));
        }
    }
    let missing: Vec<&str> = names.iter().copied().filter(|m| !given.contains_key(m)).collect();
    if !missing.is_empty() {
        let usage: Vec<String> = missing.iter().map(|m| format!("--member {m}=FILE")).collect();
        return Err(Error::Input(format!(
            "gang `{gang_name}` has members {}: no output given for {}; add {}",
            names.join(", "),
            missing.join(", "),
            usage.join(" ")
        )));
    }
    Ok(names.iter().map(|host| (host.to_string(), given[host].clone())).collect())
}

/// An import's failure said as the command's: the same words, the same exit code.
impl From<ImportError> for Error {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::File { path, source } => Error::File { path, source },
            ImportError::Parse { path, source } => Error::Parse { path, source },
            ImportError::Store(e) => Error::Store(e),
            ImportError::Output(e) => Error::Output(e),
            e @ (ImportError::NoResult { .. }
            | ImportError::SeveralResults { .. }
            | ImportError::Member(_)
            | ImportError::Aggregates { .. }) => Error::Input(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_started_at;

    #[test]
    fn started_at_takes_rfc_3339_or_a_civil_time_as_utc() {
        let utc = |s: &str| parse_started_at(s).map(|t| t.to_string());
        assert_eq!(utc("2006-11-23T18:25:53+01:00").unwrap(), "2006-11-23T17:25:53Z");
        assert_eq!(utc("2006-11-23T18:25:53Z").unwrap(), "2006-11-23T18:25:53Z");
        assert_eq!(utc("2006-11-23 18:25:53").unwrap(), "2006-11-23T18:25:53Z");
        assert_eq!(utc(" 2006-11-23T18:25:53 ").unwrap(), "2006-11-23T18:25:53Z");
        for bad in ["2006-11-23", "Thu Nov 23 18:25:53 2006", "2006-13-01 00:00:00", "yesterday", ""] {
            let err = utc(bad).unwrap_err();
            assert!(err.starts_with("expected an RFC 3339 time"), "{bad}: {err}");
        }
        assert!(utc("2999-01-01 00:00:00").unwrap_err().contains("is in the future"));
    }
}
