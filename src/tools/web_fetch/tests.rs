use std::sync::Arc;

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::model::reply::{self, ReplyStream};
use crate::model::{Model, ModelError};
use crate::protocol::StopReason;
use crate::sandbox::{NetworkSettings, Sandbox, SandboxSettings};

/// A model that answers every request with `answer` and keeps the requests.
#[derive(Default)]
struct Answerer {
    answer: String,
    seen: Mutex<Vec<ModelRequest>>,
}

impl Model for Answerer {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        self.seen.lock().unwrap().push(request);
        let message = Message {
            role: crate::protocol::Role::Assistant,
            content: vec![crate::protocol::ContentBlock::Text { text: self.answer.clone(), citations: None }],
        };
        Box::pin(async move { Ok(reply::whole(&message, StopReason::EndTurn)) })
    }
}

const PAGE: &str = "<html><head><title>T</title><style>p{}</style></head><body><h1>Install</h1>\
<script>alert(1)</script><p>Run <code>cargo add statig</code>.</p></body></html>";

async fn server_with_page() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/docs"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(PAGE, "text/html; charset=utf-8"))
        .mount(&server)
        .await;
    server
}

async fn call(tool: &WebFetch, url: &str, ctx: ToolContext) -> ToolOutput {
    tool.call(json!({"url": url, "prompt": "How do I install it?"}), ctx).await
}

fn ctx() -> ToolContext {
    ToolContext::new(std::env::temp_dir())
}

#[tokio::test]
async fn html_becomes_markdown_without_scripts_or_styles() {
    let server = server_with_page().await;
    let out = call(&WebFetch::default(), &format!("{}/docs", server.uri()), ctx()).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "# Install\n\nRun `cargo add statig`.");
    let extra = out.extra.unwrap();
    assert_eq!(extra.tool_use_result["code"], 200);
    assert_eq!(extra.tool_use_result["codeText"], "OK");
    assert_eq!(extra.tool_use_result["bytes"], PAGE.len());
}

#[tokio::test]
async fn the_small_model_answers_over_the_page_and_its_cost_is_reported() {
    let server = server_with_page().await;
    let model = Arc::new(Answerer { answer: "Run `cargo add statig`.".into(), ..Answerer::default() });
    let side = SideModel { model: model.clone(), name: "claude-haiku-4-5".into() };
    let url = format!("{}/docs", server.uri());
    let out = call(&WebFetch::default(), &url, ToolContext { side: Some(side), ..ctx() }).await;
    assert_eq!(out.content, "Run `cargo add statig`.");
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].model, "claude-haiku-4-5");
    assert_eq!(seen[0].purpose, crate::model::Purpose::Aux);
    assert_eq!(
        seen[0].messages[0].text(),
        format!(
            "The content of {url}, as Markdown:\n\n<page>\n# Install\n\nRun `cargo add statig`.\n</page>\n\nThe question \
             about it:\n\nHow do I install it?"
        )
    );
    let usage = &out.extra.unwrap().usage;
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].0, "claude-haiku-4-5");
}

#[tokio::test]
async fn a_page_is_fetched_once_in_fifteen_minutes() {
    let server = MockServer::start().await;
    Mock::given(path("/once"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("plain words", "text/plain"))
        .expect(1)
        .mount(&server)
        .await;
    let tool = WebFetch::default();
    let url = format!("{}/once", server.uri());
    assert_eq!(call(&tool, &url, ctx()).await.content, "plain words");
    assert_eq!(call(&tool, &url, ctx()).await.content, "plain words");
    server.verify().await;
}

#[tokio::test]
async fn a_same_host_redirect_is_followed() {
    let server = server_with_page().await;
    Mock::given(path("/old"))
        .respond_with(ResponseTemplate::new(301).insert_header("location", "/docs"))
        .mount(&server)
        .await;
    let out = call(&WebFetch::default(), &format!("{}/old", server.uri()), ctx()).await;
    assert_eq!(out.content, "# Install\n\nRun `cargo add statig`.");
}

#[tokio::test]
async fn a_redirect_to_another_host_is_named_not_followed() {
    let server = server_with_page().await;
    // 127.0.0.1 and localhost are different hosts to WebFetch, as to a browser.
    let elsewhere = server.uri().replace("127.0.0.1", "localhost") + "/docs";
    Mock::given(path("/away"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", elsewhere.as_str()))
        .mount(&server)
        .await;
    let url = format!("{}/away", server.uri());
    let out = call(&WebFetch::default(), &url, ctx()).await;
    assert!(!out.is_error);
    assert_eq!(
        out.content,
        format!(
            "{url} redirects (302) to another host: {elsewhere}\n\nWebFetch does not follow redirects across hosts. \
             To read the page there, call WebFetch again with url \"{elsewhere}\" and the same prompt."
        )
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.iter().filter(|r| r.url.path() == "/docs").count(), 0, "the page elsewhere was not fetched");
}

#[tokio::test]
async fn an_oversized_page_is_refused() {
    let server = MockServer::start().await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![b'a'; MAX_PAGE_BYTES + 1], "text/plain"))
        .mount(&server)
        .await;
    let url = format!("{}/big", server.uri());
    let out = call(&WebFetch::default(), &url, ctx()).await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        format!("Cannot fetch {url}: the page is larger than 10485760 bytes (10 MiB); WebFetch reads no more")
    );
}

#[tokio::test]
async fn binary_pages_and_error_statuses_are_refused() {
    let server = MockServer::start().await;
    Mock::given(path("/img"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![0u8, 1, 2], "image/png"))
        .mount(&server)
        .await;
    Mock::given(path("/gone")).respond_with(ResponseTemplate::new(404)).mount(&server).await;
    let img = format!("{}/img", server.uri());
    let out = call(&WebFetch::default(), &img, ctx()).await;
    assert_eq!(
        (out.is_error, out.content),
        (true, format!("Cannot fetch {img}: the page is image/png, not text or HTML"))
    );
    let gone = format!("{}/gone", server.uri());
    let out = call(&WebFetch::default(), &gone, ctx()).await;
    assert_eq!((out.is_error, out.content), (true, format!("Cannot fetch {gone}: the server answered 404 Not Found")));
}

#[tokio::test]
async fn the_sandbox_domain_list_bounds_webfetch() {
    let server = server_with_page().await;
    let settings = SandboxSettings {
        enabled: false,
        network: NetworkSettings {
            allowed_domains: vec!["docs.rs".into(), "*.example.com".into()],
            ..Default::default()
        },
        ..SandboxSettings::default()
    };
    let sandbox = Sandbox::for_session(settings, &std::env::temp_dir(), Some("/bin/true".into())).unwrap();
    let ctx = ToolContext { sandbox: Arc::new(sandbox), ..ctx() };
    let out = call(&WebFetch::default(), &format!("{}/docs", server.uri()), ctx).await;
    assert_eq!(
        (out.is_error, out.content.as_str()),
        (
            true,
            "127.0.0.1 is not in the sandbox's network.allowedDomains (docs.rs, *.example.com): WebFetch does not reach it."
        )
    );
    assert!(domain_allows("*.example.com", "api.example.com"));
    assert!(!domain_allows("*.example.com", "example.com"));
    assert!(!domain_allows("*.example.com", "badexample.com"));
}

#[test]
fn urls_are_checked_and_the_host_is_the_subject() {
    let tool = WebFetch::default();
    assert_eq!(
        tool.permission_subject(&json!({"url": "https://Docs.RS:443/statig", "prompt": "p"})),
        Subject::Host("docs.rs".into())
    );
    assert_eq!(tool.permission_subject(&json!({"url": "ftp://x/y", "prompt": "p"})), Subject::None);
    assert_eq!(check_url("ftp://x/y").unwrap_err(), "WebFetch fetches http and https URLs, not ftp:.");
    assert_eq!(
        check_url("https://user:pw@example.com/").unwrap_err(),
        "WebFetch does not send credentials: the URL may not hold a user name or password."
    );
    assert!(check_url("not a url").unwrap_err().starts_with("`not a url` is not a URL"));
}

#[test]
fn long_markdown_is_cut_with_a_note() {
    let long = "x".repeat(MAX_MARKDOWN_CHARS + 5);
    let cut = cut_markdown(&long);
    assert_eq!(
        cut,
        format!(
            "{}\n\n[The page goes on: only its first 100000 characters are shown.]",
            "x".repeat(MAX_MARKDOWN_CHARS)
        )
    );
    assert_eq!(cut_markdown("short"), "short");
}
