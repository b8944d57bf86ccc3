//! On a machine without CA certificates, a client for a plain-http server (tests, local
//! gateways) must still build, and an https client must fail with advice instead of a bare
//! "builder error". The certificate store is emptied through `SSL_CERT_FILE`/`SSL_CERT_DIR`,
//! which is why this test has a binary of its own.

use agentloop::model::ModelError;
use agentloop::model::anthropic::{AnthropicConfig, AnthropicModel, Auth, Secret};

#[test]
fn plain_http_needs_no_certificate_store() {
    let empty = tempfile::tempdir().unwrap();
    // SAFETY: the only test of this binary, run before any other thread reads the environment.
    unsafe {
        std::env::set_var("SSL_CERT_FILE", empty.path().join("none.pem"));
        std::env::set_var("SSL_CERT_DIR", empty.path());
    }
    let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new("sk-ant-secret")));
    config.base_url = "http://127.0.0.1:9".into();
    assert!(AnthropicModel::new(config.clone()).is_ok());

    config.base_url = "https://api.anthropic.com".into();
    let error = AnthropicModel::new(config).unwrap_err();
    let ModelError::Config(message) = &error else { panic!("{error:?}") };
    assert!(message.contains("No CA certificates were loaded"), "{message}");
    assert!(message.contains("ca-certificates"), "{message}");
    assert!(!message.contains("sk-ant-secret"));
}
