//! Reading configuration sources into a [`Config`]: statements, conditionals, includes,
//! metaknobs, local configuration files and environment overrides.

use std::collections::VecDeque;

use crate::cond;
use crate::error::Location;
use crate::expand::{expand_self, is_valid_name};
use crate::lines::{is_c_space, trim_c, LineReader};
use crate::metaknob::{self, Missing};
use crate::{Config, ConfigError, FileSource, Origin, Warning};

/// Include (and metaknob) nesting allowed; deeper nesting is almost always an include cycle.
pub(crate) const MAX_INCLUDE_DEPTH: usize = 20;

/// Environment prefixes that override knobs, in the order they are applied (later wins).
const ENV_PREFIXES: [&str; 2] = ["_CONDOR_", "_SKUA_"];

/// Where the lines being parsed come from.
struct Source<'s> {
    file: &'s str,
    /// For metaknob bodies: the `use` label and the line of the `use` statement.
    within: Option<(String, usize)>,
}

impl Source<'_> {
    fn at(&self, line: usize) -> Location {
        match &self.within {
            Some((label, use_line)) => Location {
                file: self.file.to_string(),
                line: *use_line,
                within: Some(label.as_str().into()),
            },
            None => Location::new(self.file, line),
        }
    }
}

/// One open `if`.
struct IfFrame {
    /// The branch being read is in effect (and so are all enclosing branches).
    active: bool,
    /// A branch of this `if` has already been taken (or the enclosing branch is inactive).
    taken: bool,
    seen_else: bool,
    parent_active: bool,
    line: usize,
}

struct Loader<'f> {
    cfg: Config,
    files: &'f dyn FileSource,
}

pub(crate) fn load(
    cfg: Config,
    files: &dyn FileSource,
    main_file: Option<&str>,
) -> Result<Config, ConfigError> {
    let mut loader = Loader { cfg, files };
    if let Some(path) = main_file {
        let text = files.read(path).map_err(|e| ConfigError::Unreadable {
            path: path.to_string(),
            reason: e.to_string(),
        })?;
        loader.parse(
            &text,
            &Source {
                file: path,
                within: None,
            },
            0,
        )?;
        loader.local_configs()?;
    }
    loader.environment_overrides();
    Ok(loader.cfg)
}

/// Splits a list knob (`LOCAL_CONFIG_FILE`, `LOCAL_CONFIG_DIR`) at commas and whitespace.
fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || is_c_space(c))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Statement operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=`
    Assign,
    /// `:` (obsolete assignment, or keyword lines)
    Colon,
    /// `+=`
    Append,
    /// `@=tag`
    Multi,
}

impl Loader<'_> {
    fn parse(&mut self, text: &str, src: &Source<'_>, depth: usize) -> Result<(), ConfigError> {
        let mut reader = LineReader::new(text);
        let mut ifs: Vec<IfFrame> = Vec::new();
        while let Some((lineno, line)) = reader.next_line() {
            if line.starts_with('#') || line.chars().all(is_c_space) {
                continue;
            }
            let at = src.at(lineno);
            let stmt = line.trim_start_matches(is_c_space);
            let (word, rest) = match stmt.find(is_c_space) {
                Some(i) => (&stmt[..i], &stmt[i..]),
                None => (stmt, ""),
            };
            let keyword = ["if", "elif", "else", "endif"]
                .into_iter()
                .find(|k| word.eq_ignore_ascii_case(k));
            if let Some(keyword) = keyword {
                self.conditional(keyword, trim_c(rest), &mut ifs, at, lineno)?;
                continue;
            }
            if ifs.last().is_some_and(|f| !f.active) {
                continue;
            }
            self.statement(stmt, &mut reader, src, at, depth)?;
        }
        if let Some(open) = ifs.last() {
            return Err(ConfigError::MissingEndif {
                at: src.at(reader.current_line()),
                opened_at: open.line,
            });
        }
        Ok(())
    }

    fn conditional(
        &mut self,
        keyword: &'static str,
        condition: &str,
        ifs: &mut Vec<IfFrame>,
        at: Location,
        lineno: usize,
    ) -> Result<(), ConfigError> {
        let evaluate = |cfg: &Config| {
            cond::evaluate(cfg, condition).map_err(|reason| ConfigError::BadCondition {
                at: at.clone(),
                keyword,
                condition: condition.to_string(),
                reason,
            })
        };
        match keyword {
            "if" => {
                let parent_active = ifs.last().is_none_or(|f| f.active);
                let value = if parent_active {
                    evaluate(&self.cfg)?
                } else {
                    false
                };
                ifs.push(IfFrame {
                    active: value,
                    taken: value || !parent_active,
                    seen_else: false,
                    parent_active,
                    line: lineno,
                });
            }
            "elif" => {
                let Some(frame) = ifs.last_mut() else {
                    return Err(ConfigError::UnmatchedConditional {
                        at,
                        keyword: keyword.to_string(),
                    });
                };
                if frame.seen_else {
                    return Err(ConfigError::AfterElse {
                        at,
                        keyword: keyword.to_string(),
                    });
                }
                if frame.taken {
                    frame.active = false;
                } else {
                    let value = evaluate(&self.cfg)?;
                    frame.active = value;
                    frame.taken = value;
                }
            }
            "else" => {
                let Some(frame) = ifs.last_mut() else {
                    return Err(ConfigError::UnmatchedConditional {
                        at,
                        keyword: keyword.to_string(),
                    });
                };
                if frame.seen_else {
                    return Err(ConfigError::AfterElse {
                        at,
                        keyword: keyword.to_string(),
                    });
                }
                frame.seen_else = true;
                frame.active = frame.parent_active && !frame.taken;
                frame.taken = true;
            }
            _ => {
                if ifs.pop().is_none() {
                    return Err(ConfigError::UnmatchedConditional {
                        at,
                        keyword: keyword.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// One statement (leading whitespace removed, known to be in an active branch).
    fn statement(
        &mut self,
        stmt: &str,
        reader: &mut LineReader<'_>,
        src: &Source<'_>,
        at: Location,
        depth: usize,
    ) -> Result<(), ConfigError> {
        let name_end = stmt
            .find(|c: char| is_c_space(c) || c == ':' || c == '=')
            .unwrap_or(stmt.len());
        let name = &stmt[..name_end];
        let after = &stmt[name_end..];
        let after_ws = after.trim_start_matches(is_c_space);
        let had_space = after_ws.len() != after.len();
        let unparseable = || ConfigError::Unparseable {
            at: at.clone(),
            text: stmt.to_string(),
        };
        let (op, junk, value) = if let Some(v) = after_ws.strip_prefix('=') {
            (Op::Assign, "", v)
        } else if let Some(v) = after_ws.strip_prefix(':') {
            (Op::Colon, "", v)
        } else if let Some(v) = after_ws.strip_prefix("+=").filter(|_| had_space) {
            (Op::Append, "", v)
        } else if let Some(v) = after_ws.strip_prefix("@=").filter(|_| had_space) {
            (Op::Multi, "", v)
        } else if after_ws.is_empty() {
            // A bare word: INI-style `[section]` headers are ignored, anything else is an error.
            if name.starts_with('[') {
                return Ok(());
            }
            return Err(unparseable());
        } else {
            match after_ws.find([':', '=']) {
                Some(i) => {
                    let op = if after_ws.as_bytes()[i] == b':' {
                        Op::Colon
                    } else {
                        Op::Assign
                    };
                    (op, trim_c(&after_ws[..i]), &after_ws[i + 1..])
                }
                None => return Err(unparseable()),
            }
        };
        let value = value.trim_start_matches(is_c_space);

        if op == Op::Colon {
            let keyword = name.to_ascii_lowercase();
            match keyword.trim_start_matches('@') {
                "include" => return self.include(junk, value, at, depth),
                "use" => return self.use_metaknobs(junk, value, src, at, depth),
                "error" => {
                    return Err(ConfigError::ErrorStatement {
                        at,
                        message: trim_c(value).to_string(),
                    })
                }
                "warning" => {
                    self.cfg.warnings.push(Warning {
                        at,
                        message: trim_c(value).to_string(),
                    });
                    return Ok(());
                }
                _ => {}
            }
        }

        // Macros in a knob name are expanded when the line is read (`$(N)_FOO = 1`), except in
        // metaknob bodies, whose names only take the template's arguments.
        let expanded_name;
        let name = if name.contains('$') && src.within.is_none() {
            expanded_name = self.cfg.expand(name)?;
            expanded_name.as_str()
        } else {
            name
        };
        if !is_valid_name(name) {
            return Err(ConfigError::IllegalName {
                at,
                name: name.to_string(),
            });
        }
        let value = match op {
            Op::Multi => {
                let tag = trim_c(value);
                let end_line = format!("@{tag}");
                let mut lines = Vec::new();
                loop {
                    let Some((_, l)) = reader.next_line() else {
                        return Err(ConfigError::UnterminatedMultiline {
                            at,
                            name: name.to_string(),
                            tag: tag.to_string(),
                        });
                    };
                    if l.starts_with('#') || l.chars().all(is_c_space) {
                        continue;
                    }
                    if l == end_line {
                        break;
                    }
                    lines.push(l);
                }
                lines.join("\n")
            }
            Op::Colon => {
                self.cfg.warnings.push(Warning {
                    at: at.clone(),
                    message: format!("obsolete use of ':' for assignment of {name}"),
                });
                value.to_string()
            }
            Op::Assign | Op::Append => value.to_string(),
        };
        self.assign(name, &value, Origin::File(at), op == Op::Append);
        Ok(())
    }

    /// Stores `name = value`. For `+=` the value a lookup of the name finds at this line
    /// (prefixed forms included) is put in front first; then self-references are expanded.
    fn assign(&mut self, name: &str, value: &str, origin: Origin, append: bool) {
        let mut value = value.to_string();
        if append {
            if let Some(prev) = self.cfg.raw_lookup(name).filter(|p| !p.is_empty()) {
                value = format!("{prev} {value}");
            }
        }
        if value.contains('$') {
            let names = self.self_names(name);
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let cfg = &self.cfg;
            value = expand_self(&value, &refs, |written| {
                cfg.raw_lookup(written).map(str::to_string)
            });
        }
        self.cfg.insert(name, value, origin);
    }

    /// The macro names that count as a self-reference in the value of `name`: the name itself,
    /// and for `PREFIX.NAME` also `NAME` when PREFIX is the subsystem or local name being
    /// loaded.
    fn self_names(&self, name: &str) -> Vec<String> {
        let mut names = vec![name.to_string()];
        if let Some((prefix, rest)) = name.split_once('.') {
            let ours = prefix.eq_ignore_ascii_case(&self.cfg.subsystem)
                || self
                    .cfg
                    .local_name
                    .as_deref()
                    .is_some_and(|l| prefix.eq_ignore_ascii_case(l));
            if ours {
                names.push(rest.to_string());
            }
        }
        names
    }

    fn include(
        &mut self,
        junk: &str,
        value: &str,
        at: Location,
        depth: usize,
    ) -> Result<(), ConfigError> {
        let mut if_exists = false;
        let mut command = false;
        let mut words = junk.split(is_c_space).filter(|w| !w.is_empty()).peekable();
        while let Some(w) = words.next() {
            match w {
                "ifexist" => if_exists = true,
                "command" => {
                    command = true;
                    if words.peek() == Some(&"into") {
                        words.next();
                        words.next();
                    }
                }
                _ => {
                    return Err(ConfigError::IncludeKeyword {
                        at,
                        words: junk.to_string(),
                    })
                }
            }
        }
        let path = self.cfg.expand(trim_c(value))?;
        let path = trim_c(&path).to_string();
        let piped = path.strip_suffix('|').map(|c| trim_c(c).to_string());
        if command || piped.is_some() {
            let command = piped.unwrap_or(path);
            if depth + 1 >= MAX_INCLUDE_DEPTH {
                return Err(ConfigError::IncludeTooDeep {
                    at,
                    path: command,
                    limit: MAX_INCLUDE_DEPTH,
                });
            }
            let text = match self.files.run_command(&command) {
                Ok(text) => text,
                Err(_) if if_exists => return Ok(()),
                Err(e) => {
                    return Err(ConfigError::IncludeCommand {
                        at,
                        command,
                        reason: e.to_string(),
                    })
                }
            };
            return self.parse(
                &text,
                &Source {
                    file: &command,
                    within: None,
                },
                depth + 1,
            );
        }
        if depth + 1 >= MAX_INCLUDE_DEPTH {
            return Err(ConfigError::IncludeTooDeep {
                at,
                path,
                limit: MAX_INCLUDE_DEPTH,
            });
        }
        let read = if path.is_empty() {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "empty file name",
            ))
        } else {
            self.files.read(&path)
        };
        let text = match read {
            Ok(text) => text,
            Err(_) if if_exists => return Ok(()),
            Err(e) => {
                return Err(ConfigError::IncludeNotFound {
                    at,
                    path,
                    reason: if e.kind() == std::io::ErrorKind::NotFound {
                        "no such file".to_string()
                    } else {
                        e.to_string()
                    },
                })
            }
        };
        self.parse(
            &text,
            &Source {
                file: &path,
                within: None,
            },
            depth + 1,
        )
    }

    fn use_metaknobs(
        &mut self,
        category: &str,
        list: &str,
        src: &Source<'_>,
        at: Location,
        depth: usize,
    ) -> Result<(), ConfigError> {
        // The category may be written with macros (`use $(ROLE_CATEGORY) : ...`); the
        // template list is taken as written.
        let expanded_category;
        let category = if category.contains('$') {
            expanded_category = self.cfg.expand(category)?;
            trim_c(&expanded_category)
        } else {
            category
        };
        if category.is_empty() {
            return Err(ConfigError::BadUse {
                at,
                reason: "a category (ROLE, POLICY, FEATURE, SECURITY, ...) must come before ':'"
                    .to_string(),
            });
        }
        if !metaknob::category_exists(category) {
            return Err(ConfigError::UnknownMetaknobCategory {
                at,
                category: category.to_string(),
            });
        }
        let items = metaknob::parse_list(list).map_err(|reason| ConfigError::BadUse {
            at: at.clone(),
            reason,
        })?;
        for item in items {
            let body = metaknob::template(category, &item.name).map_err(|m| match m {
                Missing::Category => ConfigError::UnknownMetaknobCategory {
                    at: at.clone(),
                    category: category.to_string(),
                },
                Missing::Template => ConfigError::UnknownMetaknob {
                    at: at.clone(),
                    category: category.to_string(),
                    name: item.name.clone(),
                },
            })?;
            if depth + 1 >= MAX_INCLUDE_DEPTH {
                return Err(ConfigError::IncludeTooDeep {
                    at,
                    path: format!("use {category}:{}", item.name),
                    limit: MAX_INCLUDE_DEPTH,
                });
            }
            let text = metaknob::expand_args(body, item.args.as_deref());
            let label = match &item.args {
                Some(a) => format!("use {}:{}({a})", category.to_ascii_uppercase(), item.name),
                None => format!("use {}:{}", category.to_ascii_uppercase(), item.name),
            };
            let within = match &src.within {
                Some((outer, _)) => format!("{label} in {outer}"),
                None => label,
            };
            self.parse(
                &text,
                &Source {
                    file: src.file,
                    within: Some((within, at.line)),
                },
                depth + 1,
            )?;
        }
        Ok(())
    }

    /// `LOCAL_CONFIG_DIR`, then `LOCAL_CONFIG_FILE` (re-read while it changes), then
    /// `LOCAL_CONFIG_DIR` again if the local files changed it.
    fn local_configs(&mut self) -> Result<(), ConfigError> {
        let dirs_before = self.cfg.get("LOCAL_CONFIG_DIR")?;
        if let Some(dirs) = &dirs_before {
            self.local_dirs(dirs)?;
        }
        self.local_files()?;
        let dirs_after = self.cfg.get("LOCAL_CONFIG_DIR")?;
        if let Some(dirs) = dirs_after {
            if dirs_before.as_deref() != Some(dirs.as_str()) {
                self.local_dirs(&dirs)?;
            }
        }
        Ok(())
    }

    fn local_dirs(&mut self, dirs: &str) -> Result<(), ConfigError> {
        let exclude = match self.cfg.get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")? {
            Some(re) => match regex::Regex::new(&re) {
                Ok(re) => Some(re),
                Err(e) => {
                    self.cfg.warnings.push(Warning {
                        at: Location::new("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP", 0),
                        message: format!("invalid regular expression, nothing excluded: {e}"),
                    });
                    None
                }
            },
            None => None,
        };
        for dir in split_list(dirs) {
            let Ok(mut names) = self.files.list_dir(&dir) else {
                continue;
            };
            names.retain(|n| exclude.as_ref().is_none_or(|re| !re.is_match(n)));
            names.sort();
            for name in names {
                let path = if dir.ends_with('/') {
                    format!("{dir}{name}")
                } else {
                    format!("{dir}/{name}")
                };
                let text = self
                    .files
                    .read(&path)
                    .map_err(|e| ConfigError::LocalUnreadable {
                        path: path.clone(),
                        knob: "LOCAL_CONFIG_DIR".to_string(),
                        reason: e.to_string(),
                    })?;
                self.parse(
                    &text,
                    &Source {
                        file: &path,
                        within: None,
                    },
                    0,
                )?;
            }
        }
        Ok(())
    }

    fn local_files(&mut self) -> Result<(), ConfigError> {
        let Some(mut list) = self.cfg.get("LOCAL_CONFIG_FILE")? else {
            return Ok(());
        };
        // A list ending in `|` is one command whose output is the configuration.
        if let Some(command) = list.strip_suffix('|') {
            let command = trim_c(command).to_string();
            let text =
                self.files
                    .run_command(&command)
                    .map_err(|e| ConfigError::IncludeCommand {
                        at: Location::new("LOCAL_CONFIG_FILE", 0),
                        command: command.clone(),
                        reason: e.to_string(),
                    })?;
            return self.parse(
                &text,
                &Source {
                    file: &command,
                    within: None,
                },
                0,
            );
        }
        // Read once, before the local files are (as HTCondor does).
        let required = self
            .cfg
            .get("REQUIRE_LOCAL_CONFIG_FILE")?
            .and_then(|v| cond::parse_bool(&v))
            .unwrap_or(true);
        let mut todo: VecDeque<String> = split_list(&list).into();
        let mut done: Vec<String> = Vec::new();
        while let Some(path) = todo.pop_front() {
            match self.files.read(&path) {
                Ok(text) => self.parse(
                    &text,
                    &Source {
                        file: &path,
                        within: None,
                    },
                    0,
                )?,
                Err(e) if required => {
                    return Err(ConfigError::LocalUnreadable {
                        path,
                        knob: "LOCAL_CONFIG_FILE".to_string(),
                        reason: e.to_string(),
                    })
                }
                Err(_) => {}
            }
            done.push(path);
            if let Some(new_list) = self.cfg.get("LOCAL_CONFIG_FILE")? {
                if new_list != list {
                    todo = split_list(&new_list)
                        .into_iter()
                        .filter(|p| !done.contains(p))
                        .collect();
                    list = new_list;
                }
            }
        }
        Ok(())
    }

    /// `_CONDOR_NAME=value` and then `_SKUA_NAME=value` (prefixes in any case) define `NAME`.
    fn environment_overrides(&mut self) {
        for prefix in ENV_PREFIXES {
            let vars: Vec<(String, String)> = self
                .cfg
                .env
                .iter()
                .filter(|(k, _)| {
                    k.len() > prefix.len()
                        && k.is_char_boundary(prefix.len())
                        && k[..prefix.len()].eq_ignore_ascii_case(prefix)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (variable, value) in vars {
                let name = &variable[prefix.len()..];
                self.assign(
                    name,
                    &value,
                    Origin::Environment {
                        variable: variable.clone(),
                    },
                    false,
                );
            }
        }
    }
}
