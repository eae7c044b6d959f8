//! Lint levels: defaults, `[workspace.metadata.gpucheck.lints]`,
//! `[package.metadata.gpucheck.lints]`, then `-A/-W/-D/-F NAME` on the
//! command line (in order, last wins). Names may be lints or groups, with or
//! without `gpucheck::`. `forbid` cannot be lowered afterwards.
//!
//! Owns: resolving the level of each lint and the note saying where it came
//! from (as rustc's "`#[warn(…)]` on by default"). Does not own: which
//! findings exist or where comments suppress them (`suppress`).

use gpucheck_analysis::lints::registry::{closest, expand};
use gpucheck_analysis::{Level, Lint, LINTS};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    /// `[workspace.metadata.gpucheck.lints]` / `[package.metadata.gpucheck.lints]`
    Table {
        table: &'static str,
        manifest: String,
        key: String,
    },
    /// `-D name` (possibly a group that contained the lint)
    CommandLine {
        flag: char,
        name: String,
    },
}

#[derive(Clone, Debug)]
pub struct Levels {
    map: HashMap<&'static str, (Level, Source)>,
    /// Problems with the configuration (unknown names), reported once.
    pub warnings: Vec<String>,
}

fn flag_level(flag: char) -> Level {
    match flag {
        'A' => Level::Allow,
        'W' => Level::Warn,
        'D' => Level::Deny,
        _ => Level::Forbid,
    }
}

impl Default for Levels {
    fn default() -> Self {
        Levels { map: LINTS.iter().map(|l| (l.name, (l.default, Source::Default))).collect(), warnings: vec![] }
    }
}

impl Levels {
    fn set(&mut self, name: &str, level: Level, source: Source) {
        match expand(name) {
            Some(lints) => {
                for l in lints {
                    let cur = self.map.get(l.name).cloned().unwrap_or((l.default, Source::Default));
                    if cur.0 == Level::Forbid && level != Level::Forbid {
                        self.warnings.push(format!(
                            "`{}` for `gpucheck::{}` is ignored: the lint was forbidden earlier ({})",
                            level.as_str(),
                            l.name,
                            describe(&cur.1, l)
                        ));
                        continue;
                    }
                    self.map.insert(l.name, (level, source.clone()));
                }
            }
            None => {
                let hint = closest(name).map(|c| format!("; did you mean `gpucheck::{c}`?")).unwrap_or_default();
                self.warnings.push(format!("unknown lint: `{name}`{hint}"));
            }
        }
    }

    /// Apply a `lints` table from Cargo.toml metadata.
    pub fn apply_table(&mut self, table: &serde_json::Value, which: &'static str, manifest: &str) {
        let Some(obj) = table.as_object() else {
            self.warnings.push(format!("`[{which}]` in {manifest} must be a table of `name = \"allow\"|\"warn\"|\"deny\"|\"forbid\"`"));
            return;
        };
        // groups first, then single lints, so `perf = "deny"` + `x = "allow"` means what it says
        let mut entries: Vec<(&String, &serde_json::Value)> = obj.iter().collect();
        entries.sort_by_key(|(k, _)| expand(k).map(|v| v.len() == 1).unwrap_or(true));
        for (k, v) in entries {
            let lv = v.as_str().or_else(|| v.get("level").and_then(|x| x.as_str()));
            match lv.and_then(Level::parse) {
                Some(level) => self.set(k, level, Source::Table { table: which, manifest: manifest.to_string(), key: k.clone() }),
                None => self
                    .warnings
                    .push(format!("`{k} = {v}` in `[{which}]` of {manifest}: expected \"allow\", \"warn\", \"deny\" or \"forbid\"")),
            }
        }
    }

    /// Apply command-line flags, in the order given.
    pub fn apply_flags(&mut self, flags: &[(char, String)]) {
        for (f, name) in flags {
            self.set(name, flag_level(*f), Source::CommandLine { flag: *f, name: name.clone() });
        }
    }

    pub fn level(&self, lint: &Lint) -> Level {
        self.map.get(lint.name).map(|x| x.0).unwrap_or(lint.default)
    }

    /// rustc-style note saying where the level came from.
    pub fn note(&self, lint: &'static Lint) -> String {
        match self.map.get(lint.name) {
            Some((_, src)) => describe(src, lint),
            None => describe(&Source::Default, lint),
        }
    }
}

fn describe(src: &Source, lint: &Lint) -> String {
    match src {
        Source::Default => format!("`#[{}(gpucheck::{})]` on by default", lint.default.as_str(), lint.name),
        Source::Table { table, manifest, key } => {
            format!("`{key}` set in `[{table}]` of {manifest}")
        }
        Source::CommandLine { flag, name } => {
            let n = name.strip_prefix("gpucheck::").unwrap_or(name);
            if n == lint.name {
                format!("requested on the command line with `-{flag} gpucheck::{n}`")
            } else {
                format!("`-{flag} gpucheck::{}` implied by `-{flag} gpucheck::{n}`", lint.name)
            }
        }
    }
}

/// `-A/-W/-D/-F NAME` (also `-ANAME`) from the raw arguments, in order.
pub fn flags_from_args(args: &[String]) -> Vec<(char, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            break;
        }
        let b = a.as_bytes();
        if b.len() >= 2 && b[0] == b'-' && matches!(b[1], b'A' | b'W' | b'D' | b'F') {
            let flag = b[1] as char;
            if b.len() > 2 {
                out.push((flag, a[2..].trim_start_matches('=').to_string()));
            } else if let Some(v) = args.get(i + 1) {
                out.push((flag, v.clone()));
                i += 1;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucheck_analysis::lints::{BARRIER_DIVERGENCE, DIVERGENT_BRANCH};
    use serde_json::json;

    #[test]
    fn precedence_command_line_over_package_over_workspace() {
        let mut l = Levels::default();
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Warn);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`#[warn(gpucheck::divergent_branch)]` on by default");
        l.apply_table(&json!({"perf": "allow"}), "workspace.metadata.gpucheck.lints", "Cargo.toml");
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Allow);
        l.apply_table(&json!({"gpucheck::divergent_branch": "deny"}), "package.metadata.gpucheck.lints", "k/Cargo.toml");
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`gpucheck::divergent_branch` set in `[package.metadata.gpucheck.lints]` of k/Cargo.toml");
        l.apply_flags(&flags_from_args(&["-D".into(), "all".into(), "-Wgpucheck::perf".into()]));
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Warn);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`-W gpucheck::divergent_branch` implied by `-W gpucheck::perf`");
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Deny);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    #[test]
    fn last_flag_wins_and_forbid_sticks() {
        let mut l = Levels::default();
        l.apply_flags(&[('A', "divergent_branch".into()), ('D', "divergent_branch".into())]);
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "requested on the command line with `-D gpucheck::divergent_branch`");
        l.apply_flags(&[('F', "correctness".into()), ('A', "barrier_divergence".into())]);
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Forbid);
        assert_eq!(l.warnings.len(), 1);
        assert!(l.warnings[0].contains("forbidden"));
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let mut l = Levels::default();
        l.apply_flags(&[('D', "gpucheck::divergent_branches".into())]);
        assert_eq!(
            l.warnings,
            vec!["unknown lint: `gpucheck::divergent_branches`; did you mean `gpucheck::divergent_branch`?".to_string()]
        );
        l.apply_table(&json!({"divergent_branch": "loud"}), "package.metadata.gpucheck.lints", "Cargo.toml");
        assert!(l.warnings[1].contains("expected \"allow\""));
    }
}
