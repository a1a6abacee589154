//! HTML for the web app: escaping (every piece of transcript text goes through [`esc`]), URLs,
//! and the page around every view. No inline script or style: the Content-Security-Policy
//! allows the app's own `/static/` files only.

use std::fmt::Write as _;

/// Text as HTML: `& < > " '` escaped; ANSI escape sequences and control characters (but new
/// lines and tabs) dropped, so a terminal's colours or a NUL in a transcript show as nothing.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in plain(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text without ANSI escape sequences and control characters (new lines and tabs kept).
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ parameters final-byte; any other escape: the next character.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if ('@'..='~').contains(&d) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A snippet whose matches are marked `[…]` (as the search marks them), escaped, the marks as
/// `<mark>` (balanced: a bracket of the text itself never opens a second mark).
pub fn marked(snippet: &str) -> String {
    let mut out = String::new();
    let mut open = false;
    // Terminal colours go first: their `[` is not a mark.
    for c in plain(snippet).chars() {
        match c {
            '[' if !open => {
                out.push_str("<mark>");
                open = true;
            }
            ']' if open => {
                out.push_str("</mark>");
                open = false;
            }
            c => out.push_str(&esc(&c.to_string())),
        }
    }
    if open {
        out.push_str("</mark>");
    }
    out
}

/// Percent-encodes a URL component (everything but unreserved characters).
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Decodes a URL or form component (`+` is a space, `%XX` a byte; invalid UTF-8 replaced).
pub fn dec(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key=value` pairs of a query string or a form body, decoded.
pub fn pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (dec(k), dec(v)),
            None => (dec(p), String::new()),
        })
        .collect()
}

/// The views in the navigation bar: (path, title).
const NAV: [(&str, &str); 4] =
    [("/search", "Search"), ("/decisions", "Decisions"), ("/file", "Files"), ("/health", "Health")];

/// A whole page: the navigation, `body` (already HTML), the app's stylesheet and script.
pub fn page(title: &str, active: &str, body: &str) -> String {
    let mut nav = String::new();
    for (path, name) in NAV {
        let class = if path == active { " class=\"active\"" } else { "" };
        let _ = write!(nav, "<a href=\"{path}\"{class}>{name}</a>");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · convdex</title><link rel=\"stylesheet\" href=\"/static/style.css\">\
         <script src=\"/static/app.js\" defer></script></head>\
         <body><header><a class=\"brand\" href=\"/search\">convdex</a><nav>{nav}</nav></header>\
         <main>{body}</main></body></html>\n",
        esc(title)
    )
}

/// A hidden input carrying the CSRF token, for every form that changes something.
pub fn csrf_input(csrf: &str) -> String {
    format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", esc(csrf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_text_is_inert() {
        let s = "<script>alert(1)</script> & \"x\" 'y' \u{1b}[31mred\u{1b}[0m \u{0}nul\n<img src=x onerror=alert(2)>";
        let e = esc(s);
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('\u{1b}') && !e.contains('\u{0}'), "{e}");
        assert!(e.contains("&lt;script&gt;") && e.contains("red") && e.contains('\n'));
        assert_eq!(marked("a [b] <c> [d"), "a <mark>b</mark> &lt;c&gt; <mark>d</mark>");
        // A terminal colour's `[` opens no mark.
        assert_eq!(marked("\u{1b}[31mred\u{1b}[0m: which [password]"), "red: which <mark>password</mark>");
    }

    #[test]
    fn urls_and_forms_round_trip() {
        let q = "数据库 & C:\\项目 a+b";
        assert_eq!(dec(&enc(q)), q);
        assert_eq!(
            pairs("q=a+b&x=%E6%95%B0&bad=%zz&e"),
            [
                ("q".into(), "a b".into()),
                ("x".into(), "数".into()),
                ("bad".into(), "%zz".into()),
                ("e".into(), String::new())
            ]
        );
    }
}
