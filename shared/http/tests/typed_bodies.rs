//! Every handler reads its body through `JsonBody<T>` (the size limit, then the request
//! type, refusals as problems naming the field): none takes the raw `Body` and reads it by
//! hand, as eleven once did, each a place for the limit or the parsing to drift.

use std::path::Path;

#[test]
fn no_handler_takes_the_raw_body() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut raw = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("body: Body") {
                raw.push(format!("{}:{}", path.display(), n + 1));
            }
        }
    }
    assert!(raw.is_empty(), "handlers taking the raw body: {raw:?}");
}
