//! convdex integration tests: one binary, one module per area. Tests that matter use the real
//! embedding model (provisioned by `make models`) and real redb files on disk.
#![allow(clippy::string_slice)] // test code: a bad offset fails the test

mod agent_hooks;
mod agents;
mod architecture;
mod cli;
mod cli_hook;
mod common;
mod concurrent;
mod corpus;
mod corpus_search;
mod crash;
mod damage;
mod decision_eval;
mod decisions;
mod durability;
mod embed;
mod engine;
mod export;
mod forget;
mod fuzz;
mod import;
mod layouts;
mod ledger;
mod mcp;
mod migrate;
mod model_ops;
mod pending;
mod ranking;
mod real_search;
mod robustness;
mod runs;
mod snapshots_extract;
mod team;
mod tokenizer_parity;
mod ui;
mod warm;
