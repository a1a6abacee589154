//! What `convdex install` writes into Claude Code's configuration and `convdex uninstall` takes
//! out: the hooks in the user settings (`settings.json`: `SessionStart`, `UserPromptSubmit`,
//! `SessionEnd`) and the MCP server in the user's MCP registry (`.claude.json`, `mcpServers`).
//! Pure: a JSON value in, a JSON value out; everything else in the files is left as it was
//! (keys keep their order).
//!
//! A hook entry is convdex's when its command's program is named `convdex` (any directory,
//! `.exe` or not) and it runs one of convdex's hook commands; installing replaces such entries
//! rather than adding a second one, so an entry written by hand from the README is taken over.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::text::paths::shell_words;

/// The MCP server's name in `mcpServers`.
pub const MCP_NAME: &str = "convdex";

/// The hooks convdex installs: Claude Code's event, the command's arguments after the program,
/// and the timeout in seconds.
pub const HOOKS: [(&str, &str, u32); 3] = [
    ("SessionStart", "hook session-start", 10),
    ("UserPromptSubmit", "hook prompt", 5),
    ("SessionEnd", "index --hook", 120),
];

/// The command lines of the hooks and the MCP server for one convdex program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// The program, as the shell should run it (an absolute path, quoted when needed).
    pub program: String,
    /// Arguments every command gets first (e.g. `--data-dir DIR`), already shell-quoted.
    pub global: Vec<String>,
}

impl Commands {
    /// The commands for `program` with `data_dir` (`None`: convdex's default data directory).
    pub fn new(program: &str, data_dir: Option<&str>) -> Commands {
        let global = data_dir.map(|d| vec!["--data-dir".to_string(), quote(d)]).unwrap_or_default();
        Commands { program: program.to_string(), global }
    }

    /// The same commands with `--model NAME` (the embedding model) when `model` is given.
    pub fn with_model(mut self, model: Option<&str>) -> Commands {
        if let Some(m) = model {
            self.global.push("--model".into());
            self.global.push(quote(m));
        }
        self
    }

    /// The shell command of a hook (`args` from [`HOOKS`]).
    pub fn hook(&self, args: &str) -> String {
        let mut words = vec![quote(&self.program)];
        words.extend(self.global.iter().cloned());
        words.push(args.to_string());
        words.join(" ")
    }
}

/// `s` as one shell word: as it is when it holds nothing the shell would split or expand,
/// else in double quotes (Claude Code runs hook commands with `sh` or, on Windows, Git Bash).
fn quote(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| !c.is_whitespace() && !"\"'$`\\;&|<>()*?[]#~!{}".contains(c));
    if plain || (s.contains('\\') && !s.contains(|c: char| c.is_whitespace() || "\"'$`".contains(c))) {
        // A Windows path's backslashes stay as they are outside quotes (see `shell_words`).
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('$', "\\$").replace('`', "\\`"))
    }
}

/// True when `command` runs convdex's hook `args` (`hook session-start`, …) or any of its
/// hooks when `args` is `None`.
pub fn is_convdex_hook(command: &str, args: Option<&str>) -> bool {
    let words = shell_words(command);
    let Some(program) = words.first() else { return false };
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let name = name.strip_suffix(".exe").unwrap_or(name);
    if !name.eq_ignore_ascii_case("convdex") {
        return false;
    }
    let rest = words[1..].join(" ");
    match args {
        Some(a) => rest.ends_with(a),
        None => HOOKS.iter().any(|(_, a, _)| rest.ends_with(a)),
    }
}

fn object<'a>(v: &'a mut Value, what: &str) -> Result<&'a mut Map<String, Value>> {
    v.as_object_mut().ok_or_else(|| {
        Error::InvalidArgument(format!("{what} is not a JSON object; fix it by hand (or move it away) and run again"))
    })
}

/// `settings` with convdex's hooks installed (each event's convdex entry replaced by the one
/// for `commands`, every other hook kept in place). An error when the file's shape is not
/// Claude Code's (`settings` or its `hooks` not an object, an event not a list).
pub fn install_hooks(settings: &Value, commands: &Commands) -> Result<Value> {
    let mut out = settings.clone();
    let root = object(&mut out, "the settings file")?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = object(hooks, "`hooks` in the settings file")?;
    for (event, args, timeout) in HOOKS {
        let wanted = json!({"type": "command", "command": commands.hook(args), "timeout": timeout});
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let Some(list) = groups.as_array_mut() else {
            return Err(Error::InvalidArgument(format!(
                "`hooks.{event}` in the settings file is not a list; fix it by hand and run again"
            )));
        };
        let ours: Vec<&Value> = list
            .iter()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter(|h| h.get("command").and_then(Value::as_str).is_some_and(|c| is_convdex_hook(c, Some(args))))
            .collect();
        if ours.len() == 1 && *ours[0] == wanted {
            continue;
        }
        remove_ours(list, Some(args));
        list.push(json!({"hooks": [wanted]}));
    }
    Ok(out)
}

/// Removes convdex's hook entries (of `args`, or all) from one event's groups, and the groups
/// they leave empty.
fn remove_ours(list: &mut Vec<Value>, args: Option<&str>) {
    for g in list.iter_mut() {
        if let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) {
            hs.retain(|h| !h.get("command").and_then(Value::as_str).is_some_and(|c| is_convdex_hook(c, args)));
        }
    }
    list.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|hs| !hs.is_empty()));
}

/// `settings` without convdex's hooks; events and the `hooks` object left empty are removed.
pub fn uninstall_hooks(settings: &Value) -> Value {
    let mut out = settings.clone();
    if let Some(hooks) = out.get_mut("hooks").and_then(Value::as_object_mut) {
        for (event, _, _) in HOOKS {
            if let Some(list) = hooks.get_mut(event).and_then(Value::as_array_mut) {
                remove_ours(list, None);
                if list.is_empty() {
                    hooks.remove(event);
                }
            }
        }
        if hooks.is_empty()
            && let Some(root) = out.as_object_mut()
        {
            root.remove("hooks");
        }
    }
    out
}

/// The events whose convdex hook is installed in `settings`, with its command.
pub fn installed_hooks(settings: &Value) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (event, args, _) in HOOKS {
        let commands = settings
            .get("hooks")
            .and_then(|h| h.get(event))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(|h| h.get("command").and_then(Value::as_str));
        for c in commands {
            if is_convdex_hook(c, Some(args)) {
                out.push((event, c.to_string()));
            }
        }
    }
    out
}

/// `registry` (the user's `.claude.json`) with the convdex MCP server registered for `commands`.
pub fn install_mcp(registry: &Value, commands: &Commands) -> Result<Value> {
    let mut out = registry.clone();
    let root = object(&mut out, "the MCP registry (.claude.json)")?;
    let servers = root.entry("mcpServers").or_insert_with(|| json!({}));
    let servers = object(servers, "`mcpServers` in .claude.json")?;
    let mut args: Vec<String> = Vec::new();
    for flag in ["--data-dir", "--model"] {
        if let Some(i) = commands.global.iter().position(|a| a == flag)
            && let Some(v) = commands.global.get(i + 1)
        {
            args.push(flag.into());
            args.push(shell_words(v).into_iter().next().unwrap_or_default());
        }
    }
    args.push("mcp".into());
    let wanted = json!({"type": "stdio", "command": commands.program, "args": args, "env": {}});
    if servers.get(MCP_NAME) != Some(&wanted) {
        servers.insert(MCP_NAME.to_string(), wanted);
    }
    Ok(out)
}

/// `registry` without the convdex MCP server (and without `mcpServers` if it is left empty and
/// convdex's entry was its only one).
pub fn uninstall_mcp(registry: &Value) -> Value {
    let mut out = registry.clone();
    if let Some(servers) = out.get_mut("mcpServers").and_then(Value::as_object_mut)
        && servers.remove(MCP_NAME).is_some()
        && servers.is_empty()
        && let Some(root) = out.as_object_mut()
    {
        root.remove("mcpServers");
    }
    out
}

/// The command of the registered convdex MCP server, if any.
pub fn installed_mcp(registry: &Value) -> Option<String> {
    registry.get("mcpServers")?.get(MCP_NAME)?.get("command")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds() -> Commands {
        Commands::new("/home/李/.cargo/bin/convdex", Some("/data/my dir"))
    }

    #[test]
    fn hooks_go_in_beside_everything_else_and_come_out_again() {
        let settings = json!({
            "model": "opus",
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
                "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
                // Written by hand from an older README: taken over, not doubled.
                "SessionEnd": [{"hooks": [{"type": "command", "command": "convdex index --hook"}]}]
            },
            "permissions": {"allow": ["Bash(ls)"]}
        });
        let once = install_hooks(&settings, &cmds()).unwrap();
        let twice = install_hooks(&once, &cmds()).unwrap();
        assert_eq!(once, twice);
        let got = installed_hooks(&once);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].1, "/home/李/.cargo/bin/convdex --data-dir \"/data/my dir\" hook session-start");
        assert_eq!(once["hooks"]["SessionStart"][0]["hooks"][0]["command"], "echo hi");
        assert_eq!(once["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert_eq!(once["hooks"]["PreToolUse"], settings["hooks"]["PreToolUse"]);
        assert_eq!(once["model"], "opus");
        let back = uninstall_hooks(&once);
        let mut expected = settings.clone();
        expected["hooks"].as_object_mut().unwrap().remove("SessionEnd");
        assert_eq!(back, expected);
        // Nothing of ours and nothing else: no empty `hooks` left behind.
        assert_eq!(uninstall_hooks(&install_hooks(&json!({}), &cmds()).unwrap()), json!({}));
    }

    #[test]
    fn a_settings_file_of_another_shape_is_an_error() {
        assert!(install_hooks(&json!([]), &cmds()).is_err());
        assert!(install_hooks(&json!({"hooks": []}), &cmds()).is_err());
        assert!(install_hooks(&json!({"hooks": {"SessionStart": {}}}), &cmds()).is_err());
        assert!(install_mcp(&json!({"mcpServers": 3}), &cmds()).is_err());
    }

    #[test]
    fn whose_hook_is_it() {
        assert!(is_convdex_hook("convdex index --hook", None));
        assert!(is_convdex_hook(r"C:\Users\李\bin\convdex.exe hook prompt", Some("hook prompt")));
        assert!(is_convdex_hook("\"/opt/my tools/convdex\" --data-dir /d hook session-start", None));
        assert!(!is_convdex_hook("my-convdex-wrapper hook prompt", None));
        assert!(!is_convdex_hook("convdex search x", None));
        assert!(!is_convdex_hook("", None));
    }

    #[test]
    fn the_mcp_server_is_registered_once_and_removed() {
        let registry = json!({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}});
        let once = install_mcp(&registry, &cmds()).unwrap();
        assert_eq!(install_mcp(&once, &cmds()).unwrap(), once);
        assert_eq!(installed_mcp(&once).as_deref(), Some("/home/李/.cargo/bin/convdex"));
        assert_eq!(once["mcpServers"]["convdex"]["args"], json!(["--data-dir", "/data/my dir", "mcp"]));
        assert_eq!(uninstall_mcp(&once), registry);
        assert_eq!(uninstall_mcp(&install_mcp(&json!({}), &cmds()).unwrap()), json!({}));
        // A chosen model goes along to the server and to every hook.
        let with = cmds().with_model(Some("all-minilm-l6-v2"));
        let v = install_mcp(&json!({}), &with).unwrap();
        assert_eq!(
            v["mcpServers"]["convdex"]["args"],
            json!(["--data-dir", "/data/my dir", "--model", "all-minilm-l6-v2", "mcp"])
        );
        assert!(
            with.hook("hook prompt").ends_with("--model all-minilm-l6-v2 hook prompt"),
            "{}",
            with.hook("hook prompt")
        );
        assert!(is_convdex_hook(&with.hook("hook prompt"), Some("hook prompt")));
    }
}
