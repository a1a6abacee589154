//! File paths as agents record them and users type them: POSIX or Windows, any script.
//!
//! One normal form is stored and looked up: `/` separators, an upper-case drive letter
//! (`D:/項目/文件.md`), no `./` segments, no trailing `/`, no doubled `/` (except a leading `//`
//! of a UNC path). Paths inside the project are stored relative to its root (`src/auth.rs`).

/// The normal form of a path (see the module documentation).
pub fn normalize(path: &str) -> String {
    let p = path.trim().replace('\\', "/");
    let unc = p.starts_with("//");
    let mut out = String::with_capacity(p.len());
    if unc {
        out.push_str("//");
    } else if p.starts_with('/') {
        out.push('/');
    }
    let mut first = true;
    for seg in p.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if !first {
            out.push('/');
        }
        first = false;
        out.push_str(seg);
    }
    upper_drive(out)
}

/// `d:/x` → `D:/x`; anything else unchanged.
fn upper_drive(mut p: String) -> String {
    let b = p.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        p.replace_range(..1, &(b[0].to_ascii_uppercase() as char).to_string());
    }
    p
}

/// True for `C:/…`, `C:\…`, `/…` and `//server/…`.
pub fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/') || path.starts_with('\\') || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

/// True when `root` is a Windows path (a drive letter, or a UNC share): compared ignoring case.
fn windows(root: &str) -> bool {
    let b = root.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || root.starts_with("//")
}

/// `path` relative to `root` when it lies inside it, else `path`; both normalised. Windows
/// roots compare ASCII-case-insensitively (drive letters and folder names).
pub fn relative_to(path: &str, root: &str) -> String {
    let p = normalize(path);
    let r = normalize(root);
    let r = r.trim_end_matches('/');
    if r.is_empty() {
        return p;
    }
    let head = p.as_bytes().get(..r.len());
    let inside = match head {
        Some(h) if windows(r) => h.eq_ignore_ascii_case(r.as_bytes()),
        Some(h) => h == r.as_bytes(),
        None => false,
    } && p.as_bytes().get(r.len()) == Some(&b'/');
    // `r.len()` is a character boundary of `p` because the bytes before it equal `r`'s (up to
    // ASCII case) and the byte at it is `/`.
    match p.get(r.len() + 1..) {
        Some(rest) if inside && !rest.is_empty() => rest.to_string(),
        _ => p,
    }
}

/// True when `a` and `b` name the same directory: the same normal form, compared ignoring ASCII
/// case when it is a Windows path (`C:\\Users\\a\\proj` and `c:/users/a/proj/`).
pub fn same_dir(a: &str, b: &str) -> bool {
    let (a, b) = (normalize(a), normalize(b));
    let (a, b) = (a.trim_end_matches('/'), b.trim_end_matches('/'));
    if windows(a) || windows(b) { a.eq_ignore_ascii_case(b) } else { a == b }
}

/// The forms under which a file the user names may be stored: the normal form, the other case
/// of its drive letter (collections written before drive letters were normalised), and, for an
/// absolute path inside `root`, the path relative to it.
pub fn lookup_forms(path: &str, root: Option<&str>) -> Vec<String> {
    let n = normalize(path);
    let mut out = vec![n.clone()];
    let b = n.as_bytes();
    if b.len() >= 2 && b[1] == b':' {
        let mut lower = n.clone();
        lower.replace_range(..1, &(b[0].to_ascii_lowercase() as char).to_string());
        out.push(lower);
    }
    if let Some(r) = root.filter(|r| !r.is_empty()) {
        let rel = relative_to(&n, r);
        if rel != n {
            out.push(rel);
        }
    }
    out.dedup();
    out
}

/// Splits a command line into words the way a POSIX shell would for plain commands: single
/// quotes keep everything, double quotes keep everything but `\"` and `\\`, a backslash outside
/// quotes escapes a following space, quote or backslash and is kept otherwise (so an unquoted
/// Windows path `C:\Users\a` stays whole). Unterminated quotes end at the end of the input.
pub fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\')) => cur.extend(chars.next()),
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.peek() {
                    Some(&n) if n == ' ' || n == '"' || n == '\'' || n == '\\' => {
                        cur.push(n);
                        chars.next();
                    }
                    _ => cur.push('\\'),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// The simple commands of a command line: split at `;`, `&&`, `||`, `|`, `&` and newlines that
/// stand outside quotes.
pub fn simple_commands(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ';' | '&' | '|' | '\n') => {
                out.push(line.get(start..i).unwrap_or_default());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(line.get(start..).unwrap_or_default());
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form() {
        assert_eq!(normalize("d:\\項目\\文件.md"), "D:/項目/文件.md");
        assert_eq!(normalize("./src//auth.rs/"), "src/auth.rs");
        assert_eq!(normalize("/home/u/./p/"), "/home/u/p");
        assert_eq!(normalize("\\\\server\\share\\x"), "//server/share/x");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn relative_paths_in_any_script_and_case() {
        assert_eq!(relative_to("/home/u/proj/src/a.rs", "/home/u/proj"), "src/a.rs");
        assert_eq!(relative_to("/home/u/project2/a.rs", "/home/u/proj"), "/home/u/project2/a.rs");
        assert_eq!(relative_to("d:\\Work\\App\\src\\x.cs", "D:\\Work\\App"), "src/x.cs");
        // A relative path with Chinese characters under a Windows root (used to panic).
        assert_eq!(relative_to("文档/说明书.md", "D:\\AI"), "文档/说明书.md");
        assert_eq!(relative_to("D:\\項目\\文件.md", "D:\\項目"), "文件.md");
        assert_eq!(relative_to("D:\\項目", "D:\\項目"), "D:/項目");
        assert_eq!(relative_to("/Home/u/proj/a", "/home/u/proj"), "/Home/u/proj/a", "POSIX is case-sensitive");
    }

    #[test]
    fn the_same_directory_in_any_spelling() {
        assert!(same_dir("C:\\Users\\a\\proj", "c:/users/a/proj/"));
        assert!(same_dir("/home/u/p/", "/home/u/./p"));
        assert!(!same_dir("/home/u/P", "/home/u/p"), "POSIX paths are case-sensitive");
        assert!(!same_dir("C:\\a\\b", "C:\\a\\bc"));
    }

    #[test]
    fn lookup_forms_cover_what_users_type() {
        let f = lookup_forms("d:\\項目\\文件.md", Some("D:\\項目"));
        assert_eq!(f, ["D:/項目/文件.md", "d:/項目/文件.md", "文件.md"]);
        assert_eq!(lookup_forms("./src/auth.rs", Some("/p")), ["src/auth.rs"]);
    }

    #[test]
    fn shell_words_like_a_shell() {
        assert_eq!(shell_words("git rm 'C:\\dir\\a b.txt'"), ["git", "rm", "C:\\dir\\a b.txt"]);
        assert_eq!(shell_words(r#"rm "a \"q\" b" c\ d C:\x\y"#), ["rm", "a \"q\" b", "c d", "C:\\x\\y"]);
        assert_eq!(shell_words("rm 'unterminated"), ["rm", "unterminated"]);
        assert_eq!(shell_words("  "), Vec::<String>::new());
        assert_eq!(shell_words("rm ''"), ["rm", ""]);
        assert_eq!(simple_commands("cd x && rm 'a;b' | cat; ls"), ["cd x ", " rm 'a;b' ", " cat", " ls"]);
    }
}
