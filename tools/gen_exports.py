"""Issue 42: the export corpus in tests/data/exports/, as a user's exporters write it.

Tiny random-weight models (configs only, never a hub download) exported the way people export them:
- PyTorch (`torch` part): gpt2, llama, qwen2, phi, gemma (with and without past key values), bert,
  distilbert, vit (dynamic image size through `interpolate_pos_encoding`), resnet, t5 (encoder,
  decoder without and with past), whisper (encoder, decoder with past), each through
  `torch.onnx.export` TorchScript (dynamo=False, opsets 13-17, one per architecture) and dynamo
  (opset 18; its per-node metadata stripped, see `strip_metadata`), with dynamic batch / sequence /
  past / image axes; and their OpenVINO IR through
  `openvino.convert_model` of the PyTorch module (PyTorch front end) and of the TorchScript ONNX file
  (ONNX front end), written by `ov.save_model` (f32);
- TensorFlow (`tf` part): Keras / tf.function models through tf2onnx (opset 13 and 17) covering
  the slicing patterns of issue 42 (pattern I): a position table sliced to the input's length and
  added back, `x[:, :n]` with a runtime `n` (tf2onnx's `size == -1 ? INT_MAX : size`), `tf.range`
  over a float-cast length, a Keras GRU (ONNX Loop), `tf.tensordot` (reshape to [-1, C] and back),
  a Keras LSTM (ONNX LSTM), an end computed through a float `Max` chain; and their IR through the
  ONNX front end.
`manifest.torch.json` and `manifest.tf.json` record, per file, the inputs (dims over named sizes; `past+seq` for a mask) and
three or more size assignments for `tools/exports_check.py`. A file over 1 MB is not written, nor
one without a Slice / StridedSlice (listed in the manifest's `no_slices`: transformers 5 exports
T5, Whisper, ResNet and ViT through dynamo without one; `pattern_jobs` has the slicing code of
earlier releases as small modules).

Pinned versions (the generator only; CI needs none of them):
  torch part (one venv):  torch==2.15.0 transformers==5.24.0 onnxscript==0.7.2 onnx==1.23.2
                          onnxruntime==1.32.0 openvino==2026.4.1 numpy==2.4.6
  tf part (another venv): tensorflow-cpu==2.21.0 tf2onnx==1.17.0 onnx==1.23.2 onnxruntime==1.32.0
                          openvino==2026.4.1 numpy==2.4.6
  optimum part (a third venv): torch==2.15.0 transformers==4.57.6 optimum==2.1.0 optimum-onnx==0.1.0
                          onnx==1.23.2 onnxruntime==1.32.0 openvino==2026.4.1
(torch and tf2onnx want different protobuf / numpy ranges, and optimum-onnx 0.1.0 wants
transformers < 4.58, hence three venvs.)

  python3 -m venv /tmp/venv-exports && /tmp/venv-exports/bin/pip install torch==2.15.0 \
      transformers==5.24.0 onnxscript==0.7.2 onnx==1.23.2 onnxruntime==1.32.0 openvino==2026.4.1
  python3 -m venv /tmp/venv-tf && /tmp/venv-tf/bin/pip install tensorflow-cpu==2.21.0 \
      tf2onnx==1.17.0 onnx==1.23.2 onnxruntime==1.32.0 openvino==2026.4.1
  /tmp/venv-exports/bin/python tools/gen_exports.py torch [--only NAME]
  /tmp/venv-tf/bin/python tools/gen_exports.py tf [--only NAME]
  /tmp/venv-optimum/bin/python tools/gen_exports.py optimum [--only NAME]   # gpt2, llama, t5, bert
Each part writes its own manifest (`manifest.PART.json`); `--only` keeps the part's other entries.
"""

import argparse
import json
import os
import re
import sys
import traceback

MAX_BYTES = 1 << 20
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "exports")

# Size assignments: distinct symbols differ in at least one assignment (a silent merge of two
# symbols is then wrong somewhere); a mask is past + seq long.
LM_SIZES = [{"batch": 2, "seq": 5, "past": 3}, {"batch": 1, "seq": 1, "past": 6}, {"batch": 3, "seq": 4, "past": 2}]
SEQ_SIZES = [{"batch": 2, "seq": 5}, {"batch": 1, "seq": 9}, {"batch": 3, "seq": 3}]
IMG_SIZES = [{"batch": 2, "height": 32, "width": 40}, {"batch": 1, "height": 24, "width": 56},
             {"batch": 3, "height": 48, "width": 24}]
ENC_SIZES = [{"batch": 2, "seq": 4, "enc": 6, "past": 3}, {"batch": 1, "seq": 1, "enc": 3, "past": 7},
             {"batch": 3, "seq": 2, "enc": 9, "past": 1}]


def load_manifest(part):
    p = os.path.join(OUT, f"manifest.{part}.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {"models": {}}


def save_manifest(man):
    man["models"] = dict(sorted(man["models"].items()))
    man["no_slices"] = sorted(set(man.get("no_slices", [])) | set(NO_SLICES))
    with open(os.path.join(OUT, f"manifest.{man['part']}.json"), "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")


def has_slices(path):
    """Whether the model has a Slice / StridedSlice (subgraph bodies included)."""
    if path.endswith(".xml"):
        import xml.etree.ElementTree as ET

        return any(l.get("type") in ("Slice", "StridedSlice") for l in ET.parse(path).getroot().iter("layer"))
    import onnx

    def walk(g):
        for n in g.node:
            if n.op_type in ("Slice", "StridedSlice"):
                return True
            for a in n.attribute:
                if (a.type == onnx.AttributeProto.GRAPH and walk(a.g)) or any(walk(b) for b in a.graphs):
                    return True
        return False

    return walk(onnx.load(path).graph)


NO_SLICES = []


def small_enough(paths):
    """Keeps the files of one model when they are under MAX_BYTES and the model has a slice to
    judge (a model without one is deleted and listed in the manifest's `no_slices`)."""
    if paths and os.path.exists(paths[0]) and not has_slices(paths[0]):
        for p in paths:
            if os.path.exists(p):
                os.remove(p)
        print(f"  no slice in {os.path.basename(paths[0])}: not kept")
        NO_SLICES.append(os.path.basename(paths[0]))
        return False
    size = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    if size > MAX_BYTES:
        for p in paths:
            if os.path.exists(p):
                os.remove(p)
        print(f"  skipped (too large: {size} bytes): {', '.join(os.path.basename(p) for p in paths)}")
        return False
    return True


def strip_metadata(path):
    """Drops the dynamo exporter's per-node metadata (`pkg.torch.onnx.stack_trace` and the like:
    7/8 of a tiny model's bytes) and doc strings; the graph, its value_info and dims are untouched."""
    import onnx

    m = onnx.load(path)
    for n in m.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        del v.metadata_props[:]
    for t in m.graph.initializer:
        del t.metadata_props[:]
    onnx.save(m, path)


def ir_from_onnx(onnx_file, man, spec, tag="onnx"):
    """`onnx_file`'s IR through OpenVINO's ONNX front end, as NAME.xml/.bin next to it."""
    import openvino as ov

    stem = onnx_file[: -len(".onnx")]
    xml = f"{stem}.{tag}.xml"
    try:
        m = ov.convert_model(os.path.join(OUT, onnx_file))
        ov.save_model(m, os.path.join(OUT, xml), compress_to_fp16=False)
    except Exception as e:  # noqa: BLE001
        print(f"  IR of {onnx_file} (ONNX front end) failed: {str(e).splitlines()[0][:200]}")
        return
    if small_enough([os.path.join(OUT, xml), os.path.join(OUT, xml[:-4] + ".bin")]):
        man["models"][xml] = dict(spec, exporter=spec["exporter"] + "+ov-onnx-fe")
        print(f"  wrote {xml}")


# ---------------------------------------------------------------- PyTorch


def torch_part(args, man):
    import numpy as np
    import openvino as ov
    import torch
    import transformers as tr

    torch.manual_seed(0)

    def inputs_for(spec, sizes, dtype_map):
        """Example tensors at one assignment (torch), in spec order."""
        out = []
        env = dict(sizes)
        for name, inp in spec["inputs"].items():
            shape = [d if isinstance(d, int) else int(eval(d, {}, env)) for d in inp["shape"]]  # noqa: S307
            if inp["fill"] == "ids":
                out.append(torch.randint(0, inp["high"], shape, dtype=torch.int64))
            elif inp["fill"] == "ones":
                out.append(torch.ones(shape, dtype=torch.int64))
            else:
                out.append(torch.randn(shape, dtype=torch.float32))
        return out

    def fill(cache, i, k, v):
        """Layer `i` of `cache` holds (k, v): set directly, not by `update` (which concatenates
        onto an empty `torch.tensor([])`, a `cat` OpenVINO's PyTorch front end cannot convert)."""
        while len(cache.layers) <= i:
            cache.layers.append(tr.cache_utils.DynamicLayer())
        layer = cache.layers[i]
        layer.lazy_initialization(k, v)
        layer.keys, layer.values = k, v

    class LM(torch.nn.Module):
        """Decoder-only LM; `past`: flat (k0, v0, k1, v1, ...) through a DynamicCache."""

        def __init__(self, model, n_layer, with_past):
            super().__init__()
            self.m, self.n, self.with_past = model, n_layer, with_past

        def forward(self, input_ids, attention_mask, *past):
            if not self.with_past:
                return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
            cache = tr.DynamicCache(config=self.m.config)
            for i in range(self.n):
                fill(cache, i, past[2 * i], past[2 * i + 1])
            o = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
            flat = []
            for layer in o.past_key_values.layers:
                flat += [layer.keys, layer.values]
            return (o.logits, *flat)

    class Seq2SeqDecoder(torch.nn.Module):
        """T5 / Whisper decoder with the encoder's output as input; optional self/cross past."""

        def __init__(self, model, n_layer, with_past, kind):
            super().__init__()
            self.m, self.n, self.with_past, self.kind = model, n_layer, with_past, kind

        def forward(self, decoder_input_ids, encoder_hidden_states, *past):
            cache = None
            if self.with_past:
                self_c, cross_c = tr.DynamicCache(config=self.m.config), tr.DynamicCache(config=self.m.config)
                for i in range(self.n):
                    fill(self_c, i, past[4 * i], past[4 * i + 1])
                    fill(cross_c, i, past[4 * i + 2], past[4 * i + 3])
                cache = tr.EncoderDecoderCache(self_c, cross_c)
            dec = self.m.get_decoder() if self.kind == "whisper" else self.m.decoder
            o = dec(input_ids=decoder_input_ids, encoder_hidden_states=encoder_hidden_states,
                    past_key_values=cache, use_cache=self.with_past)
            h = o.last_hidden_state
            logits = self.m.proj_out(h) if self.kind == "whisper" else self.m.lm_head(h)
            if not self.with_past:
                return logits
            flat = []
            for i in range(self.n):
                sl, cl = o.past_key_values.self_attention_cache.layers[i], o.past_key_values.cross_attention_cache.layers[i]
                flat += [sl.keys, sl.values]
            return (logits, *flat)

    class Call(torch.nn.Module):
        """`fn(*inputs)` over `mod` (registered, so that tracing sees its weights as parameters)."""

        def __init__(self, mod, fn):
            super().__init__()
            self.mod, self.fn = mod, fn

        def forward(self, *a):
            return self.fn(*a)

    def lm_cfgs():
        common = dict(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, max_position_embeddings=64, attn_implementation="eager")
        return {
            "gpt2": (tr.GPT2LMHeadModel, tr.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=32, n_positions=64,
                                                       bos_token_id=0, eos_token_id=0, attn_implementation="eager"), 2, 8),
            "llama": (tr.LlamaForCausalLM, tr.LlamaConfig(num_key_value_heads=1, **common), 1, 8),
            "qwen2": (tr.Qwen2ForCausalLM, tr.Qwen2Config(num_key_value_heads=1, **common), 1, 8),
            "phi": (tr.PhiForCausalLM, tr.PhiConfig(partial_rotary_factor=0.5, **common), 2, 8),
            "gemma": (tr.GemmaForCausalLM, tr.GemmaConfig(num_key_value_heads=1, head_dim=8, **common), 1, 8),
        }

    opsets = {"pattern": 14, "gpt2": 13, "llama": 14, "qwen2": 15, "phi": 16, "gemma": 17, "bert": 13, "distilbert": 14,
              "vit": 15, "resnet": 16, "t5": 17, "whisper": 14}

    jobs = []  # (name, module, spec)
    for arch, (cls, cfg, kvh, hd) in lm_cfgs().items():
        model = cls(cfg).eval()
        # Without past: the same slices as with past in every exporter (measured: the same dims
        # right for all tools), so not kept, for size; `(False, True)` writes both.
        for with_past in (True,):
            inputs = {"input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
                      "attention_mask": {"dtype": "int64", "shape": ["batch", "past+seq" if with_past else "seq"],
                                         "fill": "ones"}}
            if with_past:
                for i in range(2):
                    for kv in ("key", "value"):
                        inputs[f"past.{i}.{kv}"] = {"dtype": "float32", "shape": ["batch", kvh, "past", hd], "fill": "normal"}
            spec = {"arch": arch, "inputs": inputs, "sizes": LM_SIZES if with_past else SEQ_SIZES,
                    "names": {"attention_mask": {1: "total" if with_past else "seq"}}}
            jobs.append((f"{arch}_{'past' if with_past else 'nopast'}", LM(model, 2, with_past), spec))

    bert = tr.BertModel(tr.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=64, attn_implementation="eager")).eval()
    jobs.append(("bert", Call(bert, lambda ids, mask, tt: bert(input_ids=ids, attention_mask=mask, token_type_ids=tt).last_hidden_state),
                 {"arch": "bert", "sizes": SEQ_SIZES, "inputs": {
                     "input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
                     "attention_mask": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ones"},
                     "token_type_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 2}}}))
    dbert = tr.DistilBertModel(tr.DistilBertConfig(vocab_size=32, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                                   max_position_embeddings=64, attn_implementation="eager")).eval()
    jobs.append(("distilbert", Call(dbert, lambda ids, mask: dbert(input_ids=ids, attention_mask=mask).last_hidden_state),
                 {"arch": "distilbert", "sizes": SEQ_SIZES, "inputs": {
                     "input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
                     "attention_mask": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ones"}}}))
    vit = tr.ViTModel(tr.ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=32, attn_implementation="eager")).eval()
    jobs.append(("vit", Call(vit, lambda px: vit(pixel_values=px, interpolate_pos_encoding=True).last_hidden_state),
                 {"arch": "vit", "sizes": IMG_SIZES, "inputs": {
                     "pixel_values": {"dtype": "float32", "shape": ["batch", 3, "height", "width"], "fill": "normal"}}}))
    resnet = tr.ResNetModel(tr.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")).eval()
    jobs.append(("resnet", Call(resnet, lambda px: resnet(pixel_values=px).last_hidden_state),
                 {"arch": "resnet", "sizes": IMG_SIZES, "inputs": {
                     "pixel_values": {"dtype": "float32", "shape": ["batch", 3, "height", "width"], "fill": "normal"}}}))
    t5 = tr.T5ForConditionalGeneration(tr.T5Config(vocab_size=32, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                                   num_decoder_layers=2, num_heads=2, relative_attention_num_buckets=8,
                                                   decoder_start_token_id=0, attn_implementation="eager")).eval()
    jobs.append(("t5_encoder", Call(t5.encoder, lambda ids, mask: t5.encoder(input_ids=ids, attention_mask=mask).last_hidden_state),
                 {"arch": "t5", "sizes": SEQ_SIZES, "inputs": {
                     "input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
                     "attention_mask": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ones"}}}))
    for with_past in (False, True):
        inputs = {"decoder_input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
                  "encoder_hidden_states": {"dtype": "float32", "shape": ["batch", "enc", 16], "fill": "normal"}}
        if with_past:
            for i in range(2):
                inputs[f"past.{i}.decoder.key"] = {"dtype": "float32", "shape": ["batch", 2, "past", 8], "fill": "normal"}
                inputs[f"past.{i}.decoder.value"] = {"dtype": "float32", "shape": ["batch", 2, "past", 8], "fill": "normal"}
                inputs[f"past.{i}.encoder.key"] = {"dtype": "float32", "shape": ["batch", 2, "enc", 8], "fill": "normal"}
                inputs[f"past.{i}.encoder.value"] = {"dtype": "float32", "shape": ["batch", 2, "enc", 8], "fill": "normal"}
        jobs.append((f"t5_decoder_{'past' if with_past else 'nopast'}", Seq2SeqDecoder(t5, 2, with_past, "t5"),
                     {"arch": "t5", "sizes": ENC_SIZES, "inputs": inputs}))
    wcfg = tr.WhisperConfig(vocab_size=32, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, num_mel_bins=16,
                            max_source_positions=16, max_target_positions=32, pad_token_id=0, bos_token_id=0,
                            eos_token_id=0, decoder_start_token_id=0, attn_implementation="eager")
    whisper = tr.WhisperForConditionalGeneration(wcfg).eval()
    jobs.append(("whisper_encoder", Call(whisper.get_encoder(), lambda f: whisper.get_encoder()(input_features=f).last_hidden_state),
                 {"arch": "whisper", "sizes": [{"batch": 2}, {"batch": 1}, {"batch": 3}], "inputs": {
                     "input_features": {"dtype": "float32", "shape": ["batch", 16, 32], "fill": "normal"}}}))
    winputs = {"decoder_input_ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32},
               "encoder_hidden_states": {"dtype": "float32", "shape": ["batch", 16, 16], "fill": "normal"}}
    for kv in ("decoder.key", "decoder.value", "encoder.key", "encoder.value"):
        winputs[f"past.0.{kv}"] = {"dtype": "float32", "shape": ["batch", 2, "past" if kv.startswith("decoder") else 16, 8],
                                   "fill": "normal"}
    jobs.append(("whisper_decoder_past", Seq2SeqDecoder(whisper, 1, True, "whisper"),
                 {"arch": "whisper", "sizes": LM_SIZES, "inputs": winputs}))

    jobs += pattern_jobs(torch, Call)

    for name, module, spec in jobs:
        if args.only and args.only not in name:
            continue
        arch = spec["arch"]
        print(f"{name}")
        module.eval()
        names = list(spec["inputs"])
        example = inputs_for(spec, spec["sizes"][0], None)
        renames = spec.pop("names", {})

        def axis_name(iname, k, d):
            return renames.get(iname, {}).get(k, d)

        dyn_axes = {n: {k: axis_name(n, k, d) for k, d in enumerate(inp["shape"]) if isinstance(d, str)}
                    for n, inp in spec["inputs"].items()}
        base = {k: v for k, v in spec.items()}
        base["source"] = "pytorch"
        with torch.no_grad():
            try:
                module(*example)
            except Exception as e:  # noqa: BLE001
                print(f"  the module does not run: {e}")
                traceback.print_exc()
                continue
            # TorchScript
            ts = f"{name}.ts{opsets[arch]}.onnx"
            try:
                torch.onnx.export(module, tuple(example), os.path.join(OUT, ts), dynamo=False, opset_version=opsets[arch],
                                  input_names=names, dynamic_axes=dyn_axes, do_constant_folding=True)
                if small_enough([os.path.join(OUT, ts)]):
                    man["models"][ts] = dict(base, exporter=f"torchscript-opset{opsets[arch]}")
                    print(f"  wrote {ts}")
                    ir_from_onnx(ts, man, man["models"][ts])
            except Exception as e:  # noqa: BLE001
                print(f"  TorchScript export failed: {str(e).splitlines()[0][:300]}")
            # dynamo
            from torch.export import Dim

            dims = {}

            def dim(s):
                if s not in dims:
                    dims[s] = Dim(s)
                return dims[s]

            ds = [{k: dim(axis_name(n, k, d)) for k, d in enumerate(spec["inputs"][n]["shape"]) if isinstance(d, str)}
                  for n in names]
            # forward(a, b, *past) takes (a, b, (past...)); Call's forward(*a) takes ((a...),)
            ds = (tuple(ds),) if isinstance(module, Call) else (ds[0], ds[1]) + ((tuple(ds[2:]),) if len(ds) > 2 else ())
            dy = f"{name}.dynamo18.onnx"
            try:
                prog = torch.onnx.export(module, tuple(example), None, dynamo=True, opset_version=18,
                                         input_names=names, dynamic_shapes=ds, external_data=False)
                prog.save(os.path.join(OUT, dy), external_data=False)
                strip_metadata(os.path.join(OUT, dy))
                if small_enough([os.path.join(OUT, dy)]):
                    man["models"][dy] = dict(base, exporter="dynamo-opset18")
                    print(f"  wrote {dy}")
            except Exception as e:  # noqa: BLE001
                msg = [l for l in str(e).splitlines() if l.strip()]
                print(f"  dynamo export failed: {' | '.join(msg[:1] + [l for l in msg if 'Exception summary' in l or 'Error' in l][:3])[:400]}")
            # OpenVINO PyTorch front end: the module traced by OpenVINO (TorchScript), or, when that
            # fails, the torch.export program of it
            xml = f"{name}.pt.xml"
            shapes = [ov.PartialShape([-1 if isinstance(d, str) else d for d in spec["inputs"][n]["shape"]]) for n in names]
            types = [ov.Type.i64 if spec["inputs"][n]["dtype"] == "int64" else ov.Type.f32 for n in names]
            m, how = None, "ov-pytorch-fe"
            try:
                m = ov.convert_model(module, example_input=tuple(example), input=list(zip(shapes, types)))
            except Exception as e:  # noqa: BLE001
                ops = sorted(set(re.findall(r"(?:aten|prim)::\w+", str(e))))
                print(f"  OpenVINO PyTorch front end (traced) failed: {str(e).splitlines()[0][:120]} {ops}")
                try:
                    # Dim.AUTO: torch.export finds the relations (a mask of past + seq) itself
                    auto = torch.utils._pytree.tree_map(lambda _: Dim.AUTO, ds)
                    ep = torch.export.export(module, tuple(example), dynamic_shapes=auto, strict=False)
                    m, how = ov.convert_model(ep), "ov-pytorch-fe-export"
                except Exception as e2:  # noqa: BLE001
                    ops = sorted(set(re.findall(r"(?:aten|prim)::\w+", str(e2))))
                    print(f"  OpenVINO PyTorch front end (torch.export) failed: {str(e2).splitlines()[0][:200]} {ops}")
            try:
                if m is not None:
                    if len(m.inputs) != len(names):
                        raise RuntimeError(f"{len(m.inputs)} inputs for {len(names)}")
                    for p, n in zip(m.inputs, names):
                        p.get_tensor().set_names({n})
                    ov.save_model(m, os.path.join(OUT, xml), compress_to_fp16=False)
                    if small_enough([os.path.join(OUT, xml), os.path.join(OUT, xml[:-4] + ".bin")]):
                        man["models"][xml] = dict(base, exporter=how)
                        print(f"  wrote {xml} ({how})")
            except Exception as e:  # noqa: BLE001
                print(f"  OpenVINO IR not written: {str(e).splitlines()[0][:300]}")
        save_manifest(man)
    man["torch_versions"] = {"torch": torch.__version__, "transformers": tr.__version__, "openvino": ov.__version__,
                             "numpy": np.__version__}


def pattern_jobs(torch, Call):
    """Slicing code of earlier transformers releases and of common model code, as small modules
    (transformers 5 computes its masks and position tables without most of the slices its
    earlier releases exported): each one line of a real model."""
    F = torch.nn.functional
    f32 = lambda *shape: {"dtype": "float32", "shape": list(shape), "fill": "normal"}  # noqa: E731

    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(64, 64, dtype=torch.bool)).view(1, 1, 64, 64))
            self.register_buffer("cos_cached", torch.randn(64, 8))
            self.rel = torch.nn.Embedding(16, 2)
            self.pos = torch.nn.Embedding(64, 8)

    m = Bias().eval()

    def gpt2_causal_mask(q, k):
        # GPT-2 (transformers 4.x): bias[:, :, key_length - query_length : key_length, :key_length]
        q_len, k_len = q.size(-2), k.size(-2)
        mask = m.bias[:, :, k_len - q_len: k_len, :k_len]
        w = q @ k.transpose(-1, -2)
        return torch.where(mask, w, torch.full_like(w, -1e4))

    def t5_position_bias(q, past_k):
        # T5 (transformers 4.x): the bias over the whole length, then position_bias[:, :, -seq:, :]
        seq, real = q.size(1), past_k.size(1) + q.size(1)
        ctx = torch.arange(real)[:, None]
        mem = torch.arange(real)[None, :]
        bucket = torch.clamp(mem - ctx, -8, 7) + 8
        bias = m.rel(bucket).permute(2, 0, 1).unsqueeze(0)
        return bias[:, :, -seq:, :]

    def rotary_cached(x):
        # Llama (transformers 4.3x): cos_cached[:seq_len], rotate_half's x[..., :d/2], x[..., d/2:]
        seq = x.size(1)
        cos = m.cos_cached[:seq]
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1) * cos

    def positions_from_past(ids, past_k):
        # Whisper / OPT: embed_positions.weight[past : past + seq]
        past, seq = past_k.size(1), ids.size(1)
        return m.pos.weight[past: past + seq] + ids[..., None].float()

    def pad_to_multiple(x):
        # padding to a multiple of 4 (Mod), work in chunks, slice the padding off again
        seq = x.size(1)
        pad = (4 - seq % 4) % 4
        y = F.pad(x, (0, 0, 0, pad))
        y = y.view(y.size(0), -1, 4, y.size(-1)).mean(2, keepdim=True).expand(-1, -1, 4, -1)
        return y.reshape(x.size(0), -1, x.size(-1))[:, :seq]

    def flip_and_tail(x):
        # torch.flip (a Slice with step -1 from TorchScript), x[:, -2:], x[:, 1:-1:2]
        return x.flip(1), x[:, -2:], x[:, 1:-1:2]

    def static_cache(k, cache):
        # a static cache written at positions past .. past + seq (ScatterND) and read back
        past = cache.size(2) - k.size(2)
        idx = torch.arange(k.size(2)) + past
        cache = cache.clone()
        cache[:, :, idx] = k
        return cache[:, :, : past + k.size(2)], cache[:, :, -k.size(2):]

    def unfold_frames(x):
        # framing with hop 1 (Tensor.unfold) and a strided view of it
        return x.unfold(1, 2, 1)[:, ::2]

    rows = [
        ("pat_gpt2_causal_mask", gpt2_causal_mask, {"q": f32("batch", 2, "seq", 8), "k": f32("batch", 2, "past+seq", 8)},
         LM_SIZES, {"k": {2: "total"}}),
        ("pat_t5_position_bias", t5_position_bias, {"q": f32("batch", "seq", 8), "past_k": f32("batch", "past", 8)},
         LM_SIZES, {}),
        ("pat_rotary_cached", rotary_cached, {"x": f32("batch", "seq", 8)}, SEQ_SIZES, {}),
        ("pat_positions_from_past", positions_from_past,
         {"ids": {"dtype": "int64", "shape": ["batch", "seq"], "fill": "ids", "high": 32}, "past_k": f32("batch", "past", 8)},
         LM_SIZES, {}),
        ("pat_pad_to_multiple", pad_to_multiple, {"x": f32("batch", "seq", 8)}, SEQ_SIZES, {}),
        ("pat_flip_and_tail", flip_and_tail, {"x": f32("batch", "seq", 8)}, SEQ_SIZES, {}),
        ("pat_static_cache", static_cache, {"k": f32("batch", 2, "seq", 8), "cache": f32("batch", 2, "past+seq", 8)},
         LM_SIZES, {"cache": {2: "total"}}),
        ("pat_unfold_frames", unfold_frames, {"x": f32("batch", "seq", 8)}, SEQ_SIZES, {}),
    ]
    jobs = []
    for name, fn, inputs, sizes, names in rows:
        jobs.append((name, Call(m, fn), {"arch": "pattern", "inputs": inputs, "sizes": sizes, "names": names}))
    return jobs


# ---------------------------------------------------------------- TensorFlow


TF_SIZES = [{"batch": 2, "seq": 5}, {"batch": 1, "seq": 9}, {"batch": 3, "seq": 2}]


def tf_models():
    """name -> (function of x [batch, seq, 4] float32, description). Each ends in slices whose
    bounds come from the input's shape the way TensorFlow code writes them."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    # numpy arrays made constants inside each function (a tf.constant captured from outside
    # becomes a graph input in tf2onnx)
    wpe_np = rng.standard_normal((64, 4)).astype(np.float32)
    w_np = rng.standard_normal((4, 6)).astype(np.float32)
    keras = tf.keras
    gru = keras.layers.GRU(3, return_sequences=True)
    lstm = keras.layers.LSTM(3, return_sequences=True)
    gru(tf.zeros((1, 2, 4)))
    lstm(tf.zeros((1, 2, 4)))

    def pos_table(x):
        # GPT-2 style: h + wpe[:T], then what a model does with h
        t = tf.shape(x)[1]
        h = x + tf.constant(wpe_np)[:t]
        return h[:, 1:], h[:, :-1], h[:, -2:], h[:, t // 2:]

    def size_minus1(x):
        # tf.slice with a size computed from the shape: tf2onnx writes size == -1 ? INT_MAX : size
        t = tf.shape(x)[1]
        return tf.slice(x, [0, 1, 0], [-1, t - 1, -1]), tf.slice(x, [0, 0, 1], [tf.shape(x)[0], t, 2])

    def range_float(x):
        t = tf.cast(tf.shape(x)[1], tf.float32)
        pos = tf.range(t * 0.5)  # ceil(T / 2) positions
        y = x[:, : tf.shape(pos)[0]] * pos[None, :, None]
        return y[:, 1:], x[:, tf.cast(t / 2.0, tf.int32):]

    def keras_gru(x):
        y = gru(x)
        return y[:, -1], y[:, 1:], y[:, ::-1]

    def tensordot(x):
        y = tf.tensordot(x, tf.constant(w_np), axes=[[2], [0]])
        return y[:, 1:, :3], y[:, :, ::2]

    def keras_lstm(x):
        y = lstm(x)
        return y[:, -1], y[:, :-1]

    def float_max(x):
        t = tf.cast(tf.shape(x)[1], tf.float32)
        end = tf.cast(tf.maximum(tf.maximum(t * 0.5, 1.0), t - 3.0), tf.int32)
        return x[:, :end], x[:, end:]

    def strided(x):
        t = tf.shape(x)[1]
        return x[:, ::2], x[:, ::-1], x[..., 1:3], x[:, 0], x[:, 1:t - 1:2], tf.reverse(x, [1])[:, :2]

    def windowed(x):
        # frames of 2 with hop 1 (a Keras-style sliding window via two slices and a stack)
        return tf.stack([x[:, :-1], x[:, 1:]], axis=2)[:, ::2]

    return {
        "pos_table": pos_table, "size_minus1": size_minus1, "range_float": range_float,
        "keras_gru": keras_gru, "tensordot": tensordot, "keras_lstm": keras_lstm,
        "float_max": float_max, "strided": strided, "windowed": windowed,
    }


def tf_part(args, man):
    import numpy as np
    import openvino as ov
    import tensorflow as tf
    import tf2onnx

    spec = {"arch": "tf", "source": "tensorflow", "sizes": TF_SIZES,
            "inputs": {"x": {"dtype": "float32", "shape": ["batch", "seq", 4], "fill": "normal"}}}
    sig = [tf.TensorSpec([None, None, 4], tf.float32, name="x")]
    for name, fn in tf_models().items():
        if args.only and args.only not in name:
            continue
        print(name)
        f = tf.function(fn, input_signature=sig)
        for opset in (13, 17):
            out = f"tf_{name}.tf2onnx{opset}.onnx"
            try:
                tf2onnx.convert.from_function(f, input_signature=sig, opset=opset, output_path=os.path.join(OUT, out))
            except Exception as e:  # noqa: BLE001
                print(f"  tf2onnx (opset {opset}) failed: {str(e).splitlines()[0][:300]}")
                continue
            if small_enough([os.path.join(OUT, out)]):
                man["models"][out] = dict(spec, exporter=f"tf2onnx-opset{opset}", arch=name)
                print(f"  wrote {out}")
                if opset == 17:
                    ir_from_onnx(out, man, man["models"][out])
        xml = f"tf_{name}.tf.xml"
        try:
            m = ov.convert_model(f.get_concrete_function())
            m.inputs[0].get_tensor().set_names({"x"})
            ov.save_model(m, os.path.join(OUT, xml), compress_to_fp16=False)
            if small_enough([os.path.join(OUT, xml), os.path.join(OUT, xml[:-4] + ".bin")]):
                man["models"][xml] = dict(spec, exporter="ov-tf-fe", arch=name)
                print(f"  wrote {xml}")
        except Exception as e:  # noqa: BLE001
            print(f"  OpenVINO TensorFlow front end failed: {str(e).splitlines()[0][:300]}")
        save_manifest(man)
    man["tf_versions"] = {"tensorflow": tf.__version__, "tf2onnx": tf2onnx.__version__, "openvino": ov.__version__,
                          "numpy": np.__version__}


OPT_SIZES = [
    {"batch_size": 2, "sequence_length": 5, "past_sequence_length": 3, "encoder_sequence_length": 6,
     "decoder_sequence_length": 4, "past_decoder_sequence_length": 3},
    {"batch_size": 1, "sequence_length": 1, "past_sequence_length": 6, "encoder_sequence_length": 3,
     "decoder_sequence_length": 1, "past_decoder_sequence_length": 7},
    {"batch_size": 3, "sequence_length": 4, "past_sequence_length": 2, "encoder_sequence_length": 9,
     "decoder_sequence_length": 2, "past_decoder_sequence_length": 1},
]


def optimum_part(args, man):
    """optimum-onnx's exporter (`main_export`, no post-processing: encoder, decoder and decoder
    with past as separate files) on random-weight models saved to a temporary directory. Its dim
    names (`batch_size`, `past_sequence_length + sequence_length`, ...) are the manifest's."""
    import tempfile

    import onnx
    import optimum.version
    import torch
    import transformers as tr
    from optimum.exporters.onnx import main_export

    torch.manual_seed(0)
    jobs = {
        "gpt2": (tr.GPT2LMHeadModel, tr.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=32, n_positions=64,
                                                   bos_token_id=0, eos_token_id=0), "text-generation-with-past"),
        "llama": (tr.LlamaForCausalLM, tr.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                                      num_attention_heads=2, num_key_value_heads=1,
                                                      max_position_embeddings=64), "text-generation-with-past"),
        "t5": (tr.T5ForConditionalGeneration, tr.T5Config(vocab_size=32, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                                          num_decoder_layers=2, num_heads=2, relative_attention_num_buckets=8,
                                                          decoder_start_token_id=0), "text2text-generation-with-past"),
        "bert": (tr.BertModel, tr.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=32, max_position_embeddings=64), "feature-extraction"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for arch, (cls, cfg, task) in jobs.items():
            if args.only and args.only not in arch:
                continue
            print(arch)
            src, out = os.path.join(tmp, arch), os.path.join(tmp, arch + "-onnx")
            cls(cfg).save_pretrained(src)
            try:
                main_export(src, output=out, task=task, opset=14, no_post_process=True, do_validation=False,
                            library_name="transformers")
            except Exception as e:  # noqa: BLE001
                print(f"  optimum export failed: {str(e).splitlines()[0][:300]}")
                continue
            for f in sorted(os.listdir(out)):
                if not f.endswith(".onnx"):
                    continue
                name = f"opt_{arch}_{f[:-5]}.optimum14.onnx"
                m = onnx.load(os.path.join(out, f))
                onnx.save(m, os.path.join(OUT, name))
                inputs = {}
                for i in m.graph.input:
                    t = i.type.tensor_type
                    shape = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
                    dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name
                    if "mask" in i.name:
                        fill = {"fill": "ones"}
                    elif i.name == "position_ids":
                        fill = {"fill": "positions", "start": "past_sequence_length"}
                    elif dt.startswith("int"):
                        fill = {"fill": "ids", "high": 2 if i.name == "token_type_ids" else 32}
                    else:
                        fill = {"fill": "normal"}
                    inputs[i.name] = dict({"dtype": dt, "shape": shape}, **fill)
                spec = {"arch": arch, "source": "pytorch", "exporter": "optimum-onnx-opset14", "inputs": inputs,
                        "sizes": OPT_SIZES}
                if small_enough([os.path.join(OUT, name)]):
                    man["models"][name] = spec
                    print(f"  wrote {name}")
                    ir_from_onnx(name, man, spec)
            save_manifest(man)
    man["optimum_versions"] = {"torch": torch.__version__, "transformers": tr.__version__,
                               "optimum": optimum.version.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["torch", "tf", "optimum"])
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    man = load_manifest(args.part)
    man["part"] = args.part
    if args.part == "torch":
        torch_part(args, man)
    elif args.part == "optimum":
        optimum_part(args, man)
    else:
        tf_part(args, man)
    save_manifest(man)
    return 0


if __name__ == "__main__":
    sys.exit(main())
