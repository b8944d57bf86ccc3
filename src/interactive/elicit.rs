//! An MCP server's question to the user (elicitation) on the terminal, like a permission
//! question: the status line paused, keys going to the question only.
//!
//! The server and its message come first (and the URL, for a URL), then one key: `a` or
//! Enter accepts, `d` declines, `c` or Esc cancels. An accepted form asks its fields one line
//! each, in the server's order ([`crate::mcp::elicitation::form`]): Enter alone takes the
//! field's default (or leaves an optional field out), a value that does not fit is explained
//! and asked again, Esc cancels the whole form. An accepted URL is opened in the browser.

use futures::future::BoxFuture;
use serde_json::Map;

use super::keys::{Key, Keyboard, Question};
use super::render::{DIM, Screen};
use crate::mcp::elicitation::{Action, Answer, Asker, Kind, Request};

/// Asks the person at the terminal.
pub struct TerminalAsker {
    screen: Screen,
    keyboard: Keyboard,
}

impl TerminalAsker {
    /// An asker that asks on `screen` and takes its keys from `keyboard`.
    pub fn new(screen: Screen, keyboard: Keyboard) -> TerminalAsker {
        TerminalAsker { screen, keyboard }
    }

    /// A line typed into the question, echoed and edited (Backspace), ended by Enter; `None`
    /// when Esc (or the end of input) gives up.
    async fn read_line(&self, keys: &mut Question) -> Option<String> {
        let mut line = String::new();
        loop {
            match keys.key().await {
                Key::Char(c) => {
                    line.push(c);
                    self.screen.ask_text(&c.to_string());
                }
                Key::Backspace => {
                    if line.pop().is_some() {
                        self.screen.ask_erase();
                    }
                }
                Key::Enter => {
                    self.screen.ask_text("\n");
                    return Some(line);
                }
                Key::Escape | Key::Closed | Key::Control(0x03) => {
                    self.screen.ask_text("\n");
                    return None;
                }
                Key::Control(_) | Key::Newline | Key::PasteStart | Key::PasteEnd => {}
            }
        }
    }

    /// The choice of the first key: accept, decline or cancel.
    async fn choose(&self, keys: &mut Question) -> Action {
        loop {
            match keys.key().await {
                Key::Char('a' | 'A') | Key::Enter => return Action::Accept,
                Key::Char('d' | 'D') => return Action::Decline,
                Key::Char('c' | 'C') | Key::Escape | Key::Closed | Key::Control(0x03) => return Action::Cancel,
                Key::Char(_) | Key::Newline | Key::Backspace | Key::Control(_) | Key::PasteStart | Key::PasteEnd => {}
            }
        }
    }

    /// The form's values, asked field by field; `None` when cancelled.
    async fn fill(&self, request: &Request, keys: &mut Question) -> Option<Map<String, serde_json::Value>> {
        let style = self.screen.style;
        let mut content = Map::new();
        for field in request.fields() {
            loop {
                self.screen.ask_text(&format!("  {}: ", field.prompt()));
                let text = self.read_line(keys).await?;
                match field.parse(&text) {
                    Ok(Some(value)) => {
                        content.insert(field.name.clone(), value);
                        break;
                    }
                    Ok(None) => break,
                    Err(why) => self.screen.ask_line(&style.paint(DIM, &format!("    {why}"))),
                }
            }
        }
        Some(content)
    }
}

impl Asker for TerminalAsker {
    fn ask<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let style = self.screen.style;
            self.screen.begin_question();
            self.screen.ask_line(&format!("? MCP server `{}` asks: {}", request.server, request.message));
            let what = match &request.kind {
                Kind::Form { .. } => "a accept and fill in the form",
                Kind::Url { url, .. } => {
                    self.screen.ask_line(&format!("  {url}"));
                    "a accept and open the URL"
                }
            };
            self.screen.ask_line(&style.paint(DIM, &format!("  {what} · d decline · c or Esc cancel")));
            self.screen.ask_text("  > ");
            let mut keys = self.keyboard.question();
            let answer = match self.choose(&mut keys).await {
                Action::Decline => {
                    self.screen.ask_finish("d — declined");
                    Answer::only(Action::Decline)
                }
                Action::Cancel => {
                    self.screen.ask_finish("c — cancelled");
                    Answer::only(Action::Cancel)
                }
                Action::Accept => {
                    self.screen.ask_finish("a — accepted");
                    match &request.kind {
                        Kind::Url { url, .. } => {
                            if let Err(e) = crate::mcp::browser::open(url) {
                                self.screen.ask_line(&format!("  cannot open a browser ({e}): open the URL yourself"));
                            }
                            Answer::only(Action::Accept)
                        }
                        Kind::Form { .. } => match self.fill(request, &mut keys).await {
                            Some(content) => Answer { action: Action::Accept, content: Some(content) },
                            None => {
                                self.screen.ask_line("  cancelled");
                                Answer::only(Action::Cancel)
                            }
                        },
                    }
                }
            };
            drop(keys);
            self.screen.end_question();
            answer
        })
    }
}
