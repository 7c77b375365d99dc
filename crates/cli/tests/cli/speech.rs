//! Speech end to end: with `speech_model` and `transcription_model` configured, a model says
//! something (the audio kept as an artifact with the bytes the provider sent), a later run
//! writes that artifact down (sent as OpenAI's multipart form, refused as OpenAI refuses a
//! malformed one); and the server's `/v1/audio` endpoints do both for a client.

use super::*;

const CONFIG: &str = "speech_model = \"openai/gpt-4o-mini-tts\"\ntranscription_model = \"openai/gpt-4o-transcribe\"\n";

fn audio_reply(bytes: &[u8]) -> Canned {
    Canned {
        status: 200,
        headers: vec![("content-type".into(), "audio/mpeg".into())],
        body: bytes.to_vec(),
        max_piece: 64,
        stall_after: None,
        delay: None,
    }
}

fn transcript_reply(text: &str) -> Canned {
    Canned::json(
        200,
        &serde_json::json!({"text": text, "usage": {"type": "tokens", "input_tokens": 14, "input_token_details": {"text_tokens": 0, "audio_tokens": 14}, "output_tokens": 5, "total_tokens": 19}}),
    )
}

/// What `GET /v1/audio` of the server at `base` says.
async fn audio_offer(http: &reqwest::Client, base: &str) -> serde_json::Value {
    let answer = http
        .get(format!("{base}/v1/audio"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    serde_json::from_slice(&answer).unwrap()
}

const SPOKEN: &[u8] = b"ID3\x04\x00\x00\x00\x00\x00\x00 spoken words";

#[tokio::test]
async fn a_model_speaks_and_a_later_run_writes_down_what_it_said() {
    let e = env_with_config(
        vec![
            Canned::openai_tools(&[(
                "s1",
                "speech__say",
                &serde_json::json!({"text": "Hello from rein.", "voice": "coral"}).to_string(),
            )]),
            audio_reply(SPOKEN),
            Canned::openai_text("I said it."),
        ],
        Some(CONFIG),
    )
    .await;
    let (code, out, err) = e.rein(&["run", "Say hello."]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (_, shown, _) = e.rein(&["--json", "config", "show"]).await;
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["speech_model"], "openai/gpt-4o-mini-tts");
    assert_eq!(shown["transcription_model"], "openai/gpt-4o-transcribe");
    let spoken = e
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/audio/speech"))
        .expect("the speech endpoint was called");
    assert_eq!(
        spoken.body,
        serde_json::json!({"model": "gpt-4o-mini-tts", "input": "Hello from rein.", "voice": "coral", "response_format": "mp3"})
    );
    // Speech reports no tokens: its 16 characters are priced at the catalog's $15 a million.
    let store = e.store().await;
    let ops = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap();
    let op = store.load_operation(ops[0].id).await.unwrap().unwrap();
    assert_eq!(
        op.state.cost.by_tool.get("speech/say").copied(),
        Some(rein_core::Usd::from_nanos(240_000)),
        "{:?}",
        op.state.cost
    );
    let (code, listed, err) = e.rein(&["--json", "artifact", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["media_type"], "audio/mpeg");
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let saved = e.dir.join("hello.mp3");
    let (code, _, err) = e
        .rein(&["artifact", "get", &id, "-o", saved.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&saved).unwrap(), SPOKEN);

    // The next run writes that audio down.
    e.server.push(Canned::openai_tools(&[(
        "t1",
        "speech__transcribe",
        &serde_json::json!({"audio": id, "language": "en"}).to_string(),
    )]));
    e.server.push(transcript_reply("Hello from rein."));
    e.server
        .push(Canned::openai_text("You heard: Hello from rein."));
    let (code, out, err) = e.rein(&["run", "What did you say?"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let requests = e.server.requests();
    let heard = requests
        .iter()
        .find(|r| r.path.ends_with("/audio/transcriptions"))
        .expect("the transcription endpoint was called");
    assert!(heard.refused.is_none(), "{:?}", heard.refused);
    let form = String::from_utf8_lossy(&heard.raw);
    assert!(
        form.contains("name=\"model\"\r\n\r\ngpt-4o-transcribe\r\n")
            && form.contains("Content-Type: audio/mpeg"),
        "{form}"
    );
    let at = heard.raw.windows(3).position(|w| w == b"ID3").unwrap();
    assert_eq!(
        &heard.raw[at..at + SPOKEN.len()],
        SPOKEN,
        "the artifact's bytes were sent"
    );
    let last = requests.last().unwrap();
    let result = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .map(rein_model::testing::data_text)
        .unwrap();
    assert_eq!(result, "Hello from rein.");
}

#[tokio::test]
async fn the_servers_audio_endpoints_speak_and_write_down_as_openais_do() {
    let e = env_with_config(
        vec![audio_reply(SPOKEN), transcript_reply("Hello from rein.")],
        Some(CONFIG),
    )
    .await;
    let served = e.serve().await;
    let http = reqwest::Client::new();
    let offer = audio_offer(&http, &served.base).await;
    assert_eq!(
        offer,
        serde_json::json!({"speech": true, "transcription": true})
    );
    let resp = http
        .post(format!("{}/v1/audio/speech", served.base))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({"model": "tts-1", "input": "Hello from rein.", "voice": "nova"})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "audio/mpeg");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), SPOKEN);
    let sent = e.server.requests()[0].clone();
    assert_eq!(
        sent.body["model"], "gpt-4o-mini-tts",
        "the server's model, not the client's"
    );
    assert_eq!(sent.body["voice"], "nova");
    let form = reqwest::multipart::Form::new()
        .text("model", "whisper-1")
        .part(
            "file",
            reqwest::multipart::Part::bytes(SPOKEN.to_vec())
                .file_name("hello.mp3")
                .mime_str("audio/mpeg")
                .unwrap(),
        );
    let resp = http
        .post(format!("{}/v1/audio/transcriptions", served.base))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let said: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(said, serde_json::json!({"text": "Hello from rein."}));
    let heard = e.server.requests()[1].clone();
    assert!(heard.refused.is_none(), "{:?}", heard.refused);
    // A voice OpenAI does not have is refused before it reaches the provider.
    let resp = http
        .post(format!("{}/v1/audio/speech", served.base))
        .header("content-type", "application/json")
        .body(serde_json::json!({"input": "x", "voice": "robot"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(e.server.requests().len(), 2);
}

/// A server without speech models says so (`GET /v1/audio`), and both endpoints answer 422
/// `model_unavailable` naming the setting, without calling a provider.
#[tokio::test]
async fn a_server_without_speech_models_says_so() {
    let e = env(Vec::new()).await;
    let served = e.serve().await;
    let http = reqwest::Client::new();
    let offer = audio_offer(&http, &served.base).await;
    assert_eq!(
        offer,
        serde_json::json!({"speech": false, "transcription": false})
    );
    let resp = http
        .post(format!("{}/v1/audio/speech", served.base))
        .header("content-type", "application/json")
        .body(serde_json::json!({"input": "Hello."}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
    let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "model_unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("speech_model"),
        "{body}"
    );
    assert!(e.server.requests().is_empty());
}
