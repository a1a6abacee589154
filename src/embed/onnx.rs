//! One ONNX Runtime session of an embedding model: a call's token ids in, one mean-pooled
//! vector per text out (what fastembed's `TextEmbedding` computes with `Pooling::Mean`, without
//! its tokenizer, so that [`super::tokenizer`] can hold the vocabulary compactly).

use crate::sync::Locked;
use std::path::Path;
use std::sync::Mutex;

use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::{Session, SessionOutputs};
use ort::value::Tensor;
use tokenizers::Encoding;

/// The process's one ONNX Runtime environment (a second one is refused by ONNX Runtime).
static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);

/// Loads ONNX Runtime from `runtime` the first time; later calls keep the first library.
pub(crate) fn environment(runtime: &Path) -> Result<Environment, String> {
    let mut env = ENVIRONMENT.locked();
    if let Some(e) = env.as_ref() {
        return Ok(e.clone());
    }
    let built = ort::init_from(runtime).map_err(|e| e.to_string())?.build().map_err(|e| e.to_string())?;
    *env = Some(built.clone());
    Ok(built)
}

/// Outputs tried in order when a graph has more than one (fastembed's precedence).
const OUTPUTS: [&str; 3] = ["text_embeds", "last_hidden_state", "sentence_embedding"];

/// The session over a model file ONNX Runtime saved in its own format, holding the file's
/// bytes: with `session.use_ort_model_bytes_directly` ONNX Runtime reads the weights where they
/// lie instead of copying them (a third of the time to start the session, measured in
/// `benches/embed`, part `load`), so the bytes must outlive the session. On Unix they are the
/// file mapped ([`crate::mapped`]): the weights are the page cache's pages, shared by every
/// process that runs the model.
mod held {
    self_cell::self_cell!(
        pub(crate) struct OrtBytesSession {
            owner: crate::mapped::FileBytes,
            #[covariant]
            dependent: InMemory,
        }
    );
    pub(crate) type InMemory<'a> = ort::session::InMemorySession<'a>;
}
use held::OrtBytesSession;

/// A session over an ONNX graph (its bytes copied by ONNX Runtime) or over ONNX Runtime's own
/// format (its bytes held and read in place).
enum Held {
    Onnx(Session),
    Ort(OrtBytesSession),
}

/// An embedding model's session.
pub(crate) struct OnnxModel {
    session: Held,
    /// The graph declares a `token_type_ids` input (BERT-style models; not XLM-R).
    type_ids: bool,
}

/// How a session is built: ONNX Runtime's library, intra-op threads, its CPU memory arena,
/// whether idle intra-op threads spin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionSettings<'a> {
    pub runtime: &'a Path,
    pub threads: usize,
    pub arena: bool,
    pub spin: bool,
}

impl SessionSettings<'_> {
    fn builder(&self, level: GraphOptimizationLevel) -> Result<SessionBuilder, String> {
        let env = environment(self.runtime)?;
        let cpu = ort::ep::CPU::default().with_arena_allocator(self.arena).build();
        Session::builder(&env)
            .map_err(|e| e.to_string())?
            .with_execution_providers([cpu])
            .map_err(|e| e.to_string())?
            .with_optimization_level(level)
            .map_err(|e| e.to_string())?
            .with_intra_threads(self.threads)
            .map_err(|e| e.to_string())?
            .with_intra_op_spinning(self.spin)
            .map_err(|e| e.to_string())
    }
}

impl OnnxModel {
    /// A session over an ONNX graph's bytes, graph optimisations on. With `save`, ONNX Runtime
    /// also writes the optimised graph there in its own format (for [`OnnxModel::load_ort`]).
    pub(crate) fn load(settings: SessionSettings<'_>, model: &[u8], save: Option<&Path>) -> Result<OnnxModel, String> {
        let mut builder = settings.builder(GraphOptimizationLevel::Level3)?;
        if let Some(path) = save {
            builder = builder
                .with_optimized_model_path(path)
                .map_err(|e| e.to_string())?
                .with_config_entry("session.save_model_format", "ORT")
                .map_err(|e| e.to_string())?;
        }
        let session = builder.commit_from_memory(model).map_err(|e| e.to_string())?;
        let type_ids = has_type_ids(&session);
        Ok(OnnxModel { session: Held::Onnx(session), type_ids })
    }

    /// A session over a graph ONNX Runtime saved in its own format and already optimised
    /// (`bytes[start..]`), read in place.
    pub(crate) fn load_ort(
        settings: SessionSettings<'_>,
        bytes: crate::mapped::FileBytes,
        start: usize,
    ) -> Result<OnnxModel, String> {
        let mut builder = settings.builder(GraphOptimizationLevel::Disable)?;
        let session = OrtBytesSession::try_new(bytes, |b| {
            builder.commit_from_memory_directly(b.get(start..).unwrap_or_default()).map_err(|e| e.to_string())
        })?;
        let type_ids = has_type_ids(session.borrow_dependent());
        Ok(OnnxModel { session: Held::Ort(session), type_ids })
    }

    /// One vector per encoding (all padded to one length), mean-pooled over the tokens its
    /// attention mask keeps; not normalised.
    pub(crate) fn embed(&mut self, encodings: &[Encoding]) -> Result<Vec<Vec<f32>>, String> {
        let Some(first) = encodings.first() else { return Ok(Vec::new()) };
        let (b, n) = (encodings.len(), first.len());
        let mut ids = Vec::with_capacity(b * n);
        let mut mask = Vec::with_capacity(b * n);
        let mut types = Vec::with_capacity(if self.type_ids { b * n } else { 0 });
        for e in encodings {
            if e.len() != n {
                return Err(format!("a call's texts were not padded to one length ({} and {n} tokens)", e.len()));
            }
            ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            if self.type_ids {
                types.extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
            }
        }
        let shape = [b as i64, n as i64];
        let tensor = |v: Vec<i64>| Tensor::from_array((shape, v)).map_err(|e| e.to_string());
        let mut inputs = ort::inputs!["input_ids" => tensor(ids)?, "attention_mask" => tensor(mask.clone())?];
        if self.type_ids {
            inputs.push(("token_type_ids".into(), tensor(types)?.into()));
        }
        let pool = |outputs: SessionOutputs<'_>| {
            let value = if outputs.len() == 1 {
                &outputs[0]
            } else {
                OUTPUTS.iter().find_map(|k| outputs.get(k)).ok_or("the model has no embedding output")?
            };
            let (dims, data) = value.try_extract_tensor::<f32>().map_err(|e| e.to_string())?;
            match **dims {
                [rows, dim] if rows as usize == b => Ok(data.chunks(dim as usize).map(<[f32]>::to_vec).collect()),
                [rows, len, dim] if rows as usize == b && len as usize == n => {
                    Ok(mean_pool(data, &mask, n, dim as usize))
                }
                _ => Err(format!("the model's output has shape {dims:?} for {b} texts of {n} tokens")),
            }
        };
        match &mut self.session {
            Held::Onnx(s) => pool(s.run(inputs).map_err(|e| e.to_string())?),
            Held::Ort(s) => s.with_dependent_mut(|_, s| pool(s.run(inputs).map_err(|e| e.to_string())?)),
        }
    }
}

fn has_type_ids(session: &Session) -> bool {
    session.inputs().iter().any(|i| i.name() == "token_type_ids")
}

/// The mean of each text's token vectors over the tokens whose mask is 1 (a text with none
/// divides by 1, as fastembed does).
fn mean_pool(data: &[f32], mask: &[i64], n: usize, dim: usize) -> Vec<Vec<f32>> {
    data.chunks(n * dim)
        .zip(mask.chunks(n))
        .map(|(tokens, mask)| {
            let mut sum = vec![0f32; dim];
            let mut kept = 0f32;
            for (token, &m) in tokens.chunks(dim).zip(mask) {
                if m != 0 {
                    kept += 1.0;
                    sum.iter_mut().zip(token).for_each(|(s, x)| *s += x);
                }
            }
            let kept = if kept == 0.0 { 1.0 } else { kept };
            sum.iter_mut().for_each(|s| *s /= kept);
            sum
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::mean_pool;

    #[test]
    fn mean_pooling_keeps_only_masked_tokens() {
        // Two texts, three positions, two dimensions; the second text is padded after one token.
        let data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 10.0, 20.0, 99.0, 99.0, 99.0, 99.0];
        let mask = [1, 1, 1, 1, 0, 0];
        assert_eq!(mean_pool(&data, &mask, 3, 2), vec![vec![3.0, 4.0], vec![10.0, 20.0]]);
        assert_eq!(mean_pool(&[1.0, 1.0], &[0], 1, 2), vec![vec![0.0, 0.0]]);
    }
}
