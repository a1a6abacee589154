//! What convdex derives from messages, with no storage and no model: decisions ([`extract`]),
//! their life over time and the handoff brief ([`life`]), sub-agent run records ([`runs`]) and
//! the layered context export ([`export`]), the session-start brief ([`brief`]), and a session's documents from its transcript
//! ([`session`]). Documents in, documents (or text) out.

pub mod brief;
pub mod export;
pub mod extract;
pub mod life;
mod message;
mod replies;
pub mod runs;
mod scorer;
mod sentences;
pub mod session;
