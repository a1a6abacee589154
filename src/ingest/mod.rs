//! Transcript formats → sessions. Pure: bytes in, parsed sessions out; never touches storage.
//! [`layout`] finds the files of each session on disk.

pub mod claude;
pub mod layout;
pub mod structured;
