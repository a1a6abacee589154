//! Transcript formats → sessions. Pure: bytes in, parsed sessions out; never touches storage.

pub mod claude;
pub mod structured;
