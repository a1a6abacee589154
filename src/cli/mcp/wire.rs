//! The MCP server's stdio: every line from the client is checked before rmcp reads it, so a
//! malformed or oversized message gets a JSON-RPC error with its id instead of silence.

use super::Server;
use rmcp::ServiceExt;

/// Serves MCP on stdin/stdout until the client disconnects.
///
/// Every line from the client passes [`check`] first: a line that is not JSON gets a JSON-RPC
/// parse error (id null) and one that is JSON but not a valid MCP message gets an invalid-request
/// or invalid-params error with its id, so a client never waits for an answer that will not come
/// (rmcp ignores unparsable input and answers malformed requests without their id). Lines over
/// [`MAX_MESSAGE_BYTES`] are refused the same way.
pub fn serve(ctx: &crate::cli::Ctx) -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = Server::new(ctx)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from_server) = tokio::io::duplex(1 << 16);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        // One writer, whole lines: the server's answers and the guard's errors never interleave.
        let writer = tokio::spawn(async move {
            let mut out = tokio::io::stdout();
            while let Some(line) = rx.recv().await {
                if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                    break;
                }
            }
        });
        let answers = tx.clone();
        let pump = tokio::spawn(async move {
            let mut r = BufReader::new(from_server);
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line).await.is_ok_and(|n| n > 0) {
                if answers.send(std::mem::take(&mut line)).is_err() {
                    break;
                }
            }
        });
        let guard = tokio::spawn(async move {
            let mut input = BufReader::new(tokio::io::stdin());
            while let Ok(Some(line)) = read_bounded_line(&mut input, MAX_MESSAGE_BYTES).await {
                match check(line.as_deref()) {
                    Checked::Forward => {
                        let mut l = line.unwrap_or_default();
                        l.push(b'\n');
                        if to_server.write_all(&l).await.is_err() {
                            break;
                        }
                    }
                    Checked::Reply(v) => {
                        let mut l = v.to_string().into_bytes();
                        l.push(b'\n');
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Checked::Skip => {}
                }
            }
            // End of input: the server sees it and stops.
            let _ = to_server.shutdown().await;
        });
        let service = server.serve((server_in, server_out)).await?;
        service.waiting().await?;
        guard.abort();
        let _ = pump.await;
        let _ = writer.await;
        anyhow::Ok(())
    })
}

/// The largest message the server reads (one line of JSON); longer ones are refused.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// One line without its `\n` (`None` inside for a line longer than `max`, read to its end and
/// dropped); `Ok(None)` at the end of input.
async fn read_bounded_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<Option<Vec<u8>>>> {
    use tokio::io::AsyncBufReadExt;
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if line.is_empty() && !too_long { None } else { Some((!too_long).then_some(line)) });
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            return Ok(Some((!too_long).then_some(line)));
        }
    }
}

/// What the guard does with one line from the client.
#[derive(Debug, PartialEq)]
enum Checked {
    /// A message rmcp understands (or a notification or response it may ignore).
    Forward,
    /// Answer with this JSON-RPC error.
    Reply(serde_json::Value),
    /// An empty line.
    Skip,
}

fn rpc_error(id: serde_json::Value, code: i64, message: String) -> Checked {
    Checked::Reply(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// Classifies one line (`None`: over the size limit).
fn check(line: Option<&[u8]>) -> Checked {
    use serde_json::Value;
    let Some(line) = line else {
        return rpc_error(
            Value::Null,
            -32600,
            format!("Invalid Request: message over {MAX_MESSAGE_BYTES} bytes; send a shorter one"),
        );
    };
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Checked::Skip;
    }
    let v: Value = match serde_json::from_slice(trimmed) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(Value::Null, -32700, format!("Parse error: {e}; send one JSON-RPC message per line"));
        }
    };
    let Some(obj) = v.as_object() else {
        return rpc_error(Value::Null, -32600, "Invalid Request: a JSON-RPC message is a JSON object".into());
    };
    // JSON-RPC 2.0: an id is a string, a number or null, and an error answers with the
    // request's id, or null when it could not be read.
    let id = obj.get("id");
    let answer_id = id.filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
    let is_request = obj.contains_key("method");
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return rpc_error(answer_id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\"".into());
    }
    if id.is_some_and(|i| !(i.is_string() || i.is_number() || i.is_null())) {
        return rpc_error(Value::Null, -32600, "Invalid Request: an id is a string, a number or null".into());
    }
    if is_request && id.is_some_and(Value::is_null) {
        return rpc_error(
            Value::Null,
            -32600,
            "Invalid Request: this server answers requests with a string or number id (a null id is discouraged by JSON-RPC 2.0)".into(),
        );
    }
    if let Some(method) = obj.get("method") {
        let Some(method) = method.as_str() else {
            return rpc_error(answer_id, -32600, "Invalid Request: `method` must be a string".into());
        };
        let params = obj.get("params");
        if params.is_some_and(|p| !(p.is_object() || p.is_array())) {
            return rpc_error(answer_id, -32602, "Invalid params: `params` must be an object".into());
        }
        if method == "tools/call" {
            let p = params.and_then(Value::as_object);
            if !p.and_then(|p| p.get("name")).is_some_and(Value::is_string) {
                return rpc_error(answer_id, -32602, "Invalid params: `tools/call` needs the tool's `name`".into());
            }
            if p.and_then(|p| p.get("arguments")).is_some_and(|a| !a.is_object()) {
                return rpc_error(answer_id, -32602, "Invalid params: `arguments` must be an object".into());
            }
        }
    }
    let why = match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v.clone()) {
        Ok(_) => return Checked::Forward,
        Err(e) => e.to_string(),
    };
    match (id, is_request) {
        // Notifications and the client's own responses get no answer: rmcp decides about them.
        (None, true) => Checked::Forward,
        (None, false) if obj.contains_key("result") || obj.contains_key("error") => Checked::Forward,
        (Some(_), true) => rpc_error(answer_id, -32602, format!("Invalid params: {why}")),
        (_, _) => rpc_error(answer_id, -32600, format!("Invalid Request: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(c: &Checked) -> (serde_json::Value, i64) {
        match c {
            Checked::Reply(v) => (v["id"].clone(), v["error"]["code"].as_i64().unwrap()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_lines_get_an_error_with_the_id_when_there_is_one() {
        assert_eq!(code(&check(Some(b"not json"))), (serde_json::Value::Null, -32700));
        let surrogate = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":"\ud800"}"#;
        assert_eq!(code(&check(Some(surrogate))).1, -32700);
        assert_eq!(code(&check(Some(&[0xff, 0xfe]))).1, -32700);
        let params = check(Some(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}"#));
        assert_eq!(code(&params), (serde_json::json!(7), -32602));
        assert_eq!(code(&check(Some(b"[1,2]"))).1, -32600);
        assert_eq!(code(&check(None)).1, -32600);
        assert_eq!(check(Some(b"  ")), Checked::Skip);
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        assert_eq!(check(Some(ok)), Checked::Forward);
        assert_eq!(check(Some(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)), Checked::Forward);
    }

    /// JSON-RPC 2.0, section 5.1: the error carries the request's id, or null when it could not
    /// be read; a wrong version or id is an invalid request, wrong params invalid params.
    #[test]
    fn errors_follow_the_json_rpc_specification() {
        let null = serde_json::Value::Null;
        let id_null = br#"{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{}}"#;
        assert_eq!(code(&check(Some(id_null))), (null.clone(), -32600));
        let id_object = br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#;
        assert_eq!(code(&check(Some(id_object))), (null.clone(), -32600));
        let version = br#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#;
        assert_eq!(code(&check(Some(version))), (serde_json::json!(3), -32600));
        let no_version = br#"{"id":"q","method":"tools/list"}"#;
        assert_eq!(code(&check(Some(no_version))), (serde_json::json!("q"), -32600));
        let arguments = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":"{\"query\":\"x\"}"}}"#;
        assert_eq!(code(&check(Some(arguments))), (serde_json::json!(9), -32602));
        let method = br#"{"jsonrpc":"2.0","id":4,"method":5}"#;
        assert_eq!(code(&check(Some(method))), (serde_json::json!(4), -32600));
        let unnamed = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#;
        assert_eq!(code(&check(Some(unnamed))), (serde_json::json!(5), -32602));
        // Every error is a whole JSON-RPC response: version, id (possibly null) and error.
        let Checked::Reply(v) = check(Some(id_null)) else { panic!("no reply") };
        assert!(v.as_object().unwrap().contains_key("id") && v["jsonrpc"] == "2.0", "{v}");
    }

    #[test]
    fn long_lines_are_dropped_whole() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let input = format!("{}\nok\nlast", "x".repeat(100));
            let mut r = tokio::io::BufReader::with_capacity(16, input.as_bytes());
            assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Some(None));
            assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Some(Some(b"ok".to_vec())));
            assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Some(Some(b"last".to_vec())));
            assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), None);
        });
    }
}
