//! rein-knowledge: knowledge files made ready for retrieval: what a file holds as text, or why it is skipped
//! ([`parse`]), and that text cut into chunks that keep their place: the file's lines they
//! span and the headings they sit under ([`chunk`]). Storing, indexing and searching the
//! chunks is the store's and the knowledge tool's.

pub mod chunk;
pub mod parse;

pub use chunk::{Chunk, ChunkOptions, chunk};
pub use parse::{Format, Parsed, parse};
