//! `python.run` end to end: a conversation's code writes a chart and a data file (kept as
//! artifacts, listed and fetched with `rein artifact`), its next turn reads the file back from
//! the same workspace, the model is shown the chart it drew, and a new conversation starts
//! with an empty one.

use super::*;

fn python(id: &str, code: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "python__run",
        &serde_json::json!({ "code": code }).to_string(),
    )])
}

/// A 1×1 PNG written by Python's standard library (what a plotting library saves).
const CHART: &str = r#"
import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(b"\x00\x1e\x5a\xc8")) + chunk(b"IEND", b"")
open("chart.png", "wb").write(png)
open("data.txt", "w").write("42")
print("saved", len(png))
"#;

#[tokio::test]
async fn code_keeps_its_files_in_the_conversation_and_they_come_back_as_artifacts() {
    let e = env(vec![
        python("p1", CHART),
        Canned::openai_text("Saved a chart."),
        python("p2", "print(open('data.txt').read())"),
        Canned::openai_text("It says 42."),
        python("p3", "import os; print(sorted(os.listdir('.')))"),
        Canned::openai_text("Nothing here."),
    ])
    .await;
    let (code, out, err) = piped(&e, &["chat"], "Plot it.\nWhat did you save?\n/exit\n").await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("It says 42."), "{out}");
    let first = last_tool_result(&e, 1);
    assert!(first.contains("exit code: 0"), "{first}");
    assert!(first.contains("chart.png (image/png,"), "{first}");
    let id = first
        .lines()
        .skip_while(|l| *l != "--- artifacts ---")
        .find(|l| l.contains("chart.png"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no artifact line: {first}"))
        .to_owned();
    // The next turn of the conversation finds the file its code wrote.
    let second = last_tool_result(&e, 3);
    assert!(second.contains("--- stdout ---\n42"), "{second}");

    // The artifacts are listed with their conversation and fetched as written.
    let (code, listed, err) = e.rein(&["--json", "artifact", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    let names: Vec<&str> = listed.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2, "{listed:?}");
    assert!(names.contains(&"chart.png") && names.contains(&"data.txt"));
    let chart = listed.iter().find(|a| a["id"] == id.as_str()).unwrap();
    assert_eq!(chart["media_type"], "image/png");
    let topic = chart["topic_id"].as_str().unwrap().to_owned();
    let (code, same, err) = e
        .rein(&["--json", "artifact", "list", "--topic", &topic])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Vec<serde_json::Value>>(&same)
            .unwrap()
            .len(),
        2
    );
    let saved = e.dir.join("chart-copy.png");
    let (code, _, err) = e
        .rein(&["artifact", "get", &id, "-o", saved.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&saved).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(bytes.len() as u64, chart["size"].as_u64().unwrap());
    // The model (it can see) was shown the chart after the call's result: Chat Completions
    // takes images from the user only, so they follow the turn's tool messages.
    let sent = e.server.requests()[1].body["messages"].clone();
    let shown = sent.as_array().unwrap().last().unwrap();
    assert_eq!(shown["role"], "user", "{sent:#}");
    assert_eq!(shown["content"][0]["text"], "The images of tool call p1:");
    use base64::Engine;
    let url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(shown["content"][1]["image_url"]["url"], url.as_str());
    assert_eq!(
        shown["content"].as_array().unwrap().len(),
        2,
        "data.txt is not an image: {shown}"
    );
    let (code, _, err) = e
        .rein(&["artifact", "get", "art-00000000000000000000000000000000"])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("art-00000000000000000000000000000000"),
        "{err}"
    );

    // Another conversation's workspace is its own.
    let (code, out, err) = e.rein(&["run", "What files are there?"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let third = last_tool_result(&e, 5);
    assert!(third.contains("--- stdout ---\n[]"), "{third}");
}
