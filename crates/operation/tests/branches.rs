//! The conversation tree through the driver: a regeneration and an edit each start a sibling
//! branch (nothing is overwritten) and the model sees exactly the branch it continues;
//! switching branches changes what the next turn continues; a branch that does not fit is
//! refused with nothing written; a title model names the topic after its first exchange.

use crate::common;

use rein_core::MessageId;
use rein_model::testing::{Canned, Recorded, serve};
use rein_operation::topic::{TopicTree, tree};
use rein_operation::{BranchError, Driver, DriverError, RunEnd, StartOptions, Turn};
use rein_store::{Store, TitleSource, Topics};

use common::driver;

/// The conversation a chat request carried, without system messages: `role: text`.
fn turns(r: &Recorded) -> Vec<String> {
    r.conversation()
        .into_iter()
        .map(|(role, text)| format!("{role}: {text}"))
        .collect()
}

fn path_texts(t: &TopicTree) -> Vec<String> {
    t.path().iter().map(|m| m.text_content()).collect()
}

fn id_of(t: &TopicTree, text: &str) -> MessageId {
    t.messages
        .iter()
        .find(|m| m.text_content() == text)
        .unwrap()
        .id
}

async fn turn(d: &Driver, topic: &str, prompt: &str, turn: Turn) -> Result<(), DriverError> {
    let id = d
        .start(
            prompt,
            &StartOptions {
                topic_id: Some(topic.into()),
                turn,
                ..Default::default()
            },
        )
        .await?;
    assert!(matches!(d.run(id).await?, RunEnd::Done { .. }));
    Ok(())
}

#[tokio::test]
async fn regenerations_and_edits_are_sibling_branches_and_the_model_sees_the_branch() {
    let server = serve(
        vec![
            Canned::openai_text("one"),
            Canned::openai_text("Counting together"),
            Canned::openai_text("two"),
            Canned::openai_text("two, again"),
            Canned::openai_text("three"),
            Canned::openai_text("four"),
        ],
        3,
    )
    .await;
    let (_, store) = common::temp_store("rein-branches").await;
    let d = driver(&server, &store).with_system_model(common::gpt_4o_mini());
    let topic = "counting";
    turn(&d, topic, "first", Turn::Continue).await.unwrap();
    let titled = store.topic(topic).await.unwrap().unwrap();
    assert_eq!(
        (titled.title.as_deref(), titled.title_source),
        (Some("Counting together"), TitleSource::Model),
        "the title model named it after the first exchange"
    );
    let title_request = &server.requests()[1];
    assert!(turns(title_request)[0].contains("User: first\nAssistant: one"));
    turn(&d, topic, "second", Turn::Continue).await.unwrap();
    assert_eq!(
        server.requests().len(),
        3,
        "only the first exchange is titled"
    );

    // Regenerate "two": the model sees the branch up to "second", without the old answer.
    let t = tree(&*store, topic).await.unwrap().unwrap();
    turn(&d, topic, "", Turn::Regenerate(id_of(&t, "two")))
        .await
        .unwrap();
    assert_eq!(
        turns(&server.requests()[3]),
        ["user: first", "assistant: one", "user: second"]
    );
    let t = tree(&*store, topic).await.unwrap().unwrap();
    assert_eq!(path_texts(&t), ["first", "one", "second", "two, again"]);
    assert_eq!(t.branches.len(), 1);
    assert_eq!(
        (t.branches[0].index, t.branches[0].alternatives.len()),
        (2, 2)
    );
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| m.text_content() == "two")
            .count(),
        1,
        "kept"
    );

    // Edit "second": a sibling under "one"; the model never sees the edited message.
    turn(&d, topic, "second, edited", Turn::Edit(id_of(&t, "second")))
        .await
        .unwrap();
    assert_eq!(
        turns(&server.requests()[4]),
        ["user: first", "assistant: one", "user: second, edited"]
    );
    let t = tree(&*store, topic).await.unwrap().unwrap();
    assert_eq!(path_texts(&t), ["first", "one", "second, edited", "three"]);
    assert_eq!(
        t.branches[0].alternatives,
        [id_of(&t, "second"), id_of(&t, "second, edited")]
    );

    // Switch back to the first "second": its newest answer shows, and the next turn continues it.
    assert!(
        store
            .set_active_message(topic, id_of(&t, "second"))
            .await
            .unwrap()
    );
    let t = tree(&*store, topic).await.unwrap().unwrap();
    assert_eq!(path_texts(&t), ["first", "one", "second", "two, again"]);
    turn(&d, topic, "go on", Turn::Continue).await.unwrap();
    assert_eq!(
        turns(&server.requests()[5]),
        [
            "user: first",
            "assistant: one",
            "user: second",
            "assistant: two, again",
            "user: go on"
        ]
    );
    let t = tree(&*store, topic).await.unwrap().unwrap();
    assert_eq!(
        path_texts(&t),
        ["first", "one", "second", "two, again", "go on", "four"]
    );
    assert_eq!(t.messages.len(), 9, "nothing was overwritten");
}

#[tokio::test]
async fn a_branch_that_does_not_fit_is_refused_with_nothing_written() {
    let server = serve(vec![Canned::openai_text("one")], 3).await;
    let (_, store) = common::temp_store("rein-branches-refused").await;
    let d = driver(&server, &store);
    turn(&d, "t", "first", Turn::Continue).await.unwrap();
    let t = tree(&*store, "t").await.unwrap().unwrap();
    let (first, one) = (id_of(&t, "first"), id_of(&t, "one"));
    let refused = |e: DriverError| match e {
        DriverError::Branch(b) => b,
        other => panic!("not a branch refusal: {other}"),
    };
    let start = |prompt: &'static str, topic: Option<&'static str>, turn: Turn| {
        let d = &d;
        async move {
            d.start(
                prompt,
                &StartOptions {
                    topic_id: topic.map(Into::into),
                    turn,
                    ..Default::default()
                },
            )
            .await
        }
    };
    assert!(matches!(
        refused(start("x", Some("t"), Turn::Edit(one)).await.unwrap_err()),
        BranchError::NotAUserMessage(m) if m == one
    ));
    assert!(matches!(
        refused(
            start("again", Some("t"), Turn::Regenerate(one))
                .await
                .unwrap_err()
        ),
        BranchError::PromptWithRegenerate(_)
    ));
    let stranger = MessageId::new();
    assert!(matches!(
        refused(start("x", Some("t"), Turn::Edit(stranger)).await.unwrap_err()),
        BranchError::UnknownMessage { message, .. } if message == stranger
    ));
    assert!(matches!(
        refused(start("x", None, Turn::Edit(first)).await.unwrap_err()),
        BranchError::NoTopic
    ));
    assert!(matches!(
        refused(
            start("", Some("elsewhere"), Turn::Regenerate(first))
                .await
                .unwrap_err()
        ),
        BranchError::UnknownTopic(_)
    ));
    let after = tree(&*store, "t").await.unwrap().unwrap();
    assert_eq!(
        after.messages.len(),
        t.messages.len(),
        "nothing was written"
    );
    assert_eq!(
        store
            .list_operations(&Default::default())
            .await
            .unwrap()
            .len(),
        1
    );
}
