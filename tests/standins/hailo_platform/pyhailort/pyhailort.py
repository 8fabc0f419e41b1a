"""Stand-in for HailoRT's Python API (hailo_platform.pyhailort.pyhailort), for
tests only: it lets validate_on_device.py run end to end without a Hailo-10H.

Only the API surface that validate_on_device.py uses is here, with the names
and signatures of hailo-ai/hailort v5.2.0 (commit 41a720b),
hailort/libhailort/bindings/python/platform/hailo_platform/pyhailort/pyhailort.py:

- VDevice(params=None, *, device_ids=None), VDevice.create_params(),
  VDevice.create_infer_model(hef_source, name=""), release(), context manager;
  params.scheduling_algorithm (pyhailort.cpp VDeviceParams; default
  ROUND_ROBIN, hailort_defaults.cpp).
- HEF(hef_source), get_network_group_names(), _get_external_resources(resource_name)
  (private in 5.2.0), _get_external_resource_names().
- InferModel: input(name=""), output(name=""), inputs, outputs, input_names,
  output_names, configure(), set_batch_size(batch_size), _set_enable_kv_cache(enable_kv_cache)
  (private in 5.2.0); InferModel.InferStream: name, shape, format (.type, .order),
  quant_infos, set_format_type(type).
- ConfiguredInferModel: create_bindings(input_buffers=None, output_buffers=None),
  run(bindings, timeout), _update_cache_offset(offset_delta_entries) and
  _finalize_cache() (private in 5.2.0), shutdown(), context manager;
  Bindings.input(name=""), Bindings.output(name=""); Bindings.InferStream.set_buffer(buffer),
  get_buffer(tf_format=False).
- LLM(vdevice, model_path, lora_name="", optimize_memory_on_device=False):
  generate(prompt, tools=None, temperature=None, top_p=None, top_k=None,
  frequency_penalty=None, max_generated_tokens=None, do_sample=None, seed=None),
  generate_all(...), tokenize(text), max_context_capacity(), clear_context(), prompt_template(),
  get_context_usage_size(), release();
  LLMGeneratorCompletion: generation_status, read(timeout_ms=10000),
  read_all(timeout_ms=10000), iteration, context manager.
- FormatType (UINT8, UINT16, FLOAT32), HailoSchedulingAlgorithm (NONE, ROUND_ROBIN),
  QuantInfo (qp_zp, qp_scale, limvals_min, limvals_max), HailoRTException and
  HailoRTNotFoundException.

What it enforces because the real runtime does (hailort v5.2.0 sources named):
- create_infer_model with a name that is not a network group of the HEF fails;
  without a name the HEF must hold a single group.
- LLM finds its groups by name suffix as llm_server.cpp 46-68 does ("prefill"
  with <= 2 groups, "tbt" only with exactly 2, "base_model__prefill"/"__tbt"
  with more) and fails with "Model doesnt have NG with name-suffix" otherwise;
  every group needs the six inputs found by the hailo-config suffixes
  (pre_process.cpp validate_inputs_names); embeddings must be UINT16
  (pre_process.cpp LLMPreProcess::create). GenAI needs the scheduler. One LLM
  holds the device's KV cache until released (llm_server.cpp 1171,
  hailort_server.cpp mark_kv_cache_in_use).
- A prompt that is a list of messages is rendered through hailo-config.json's
  chat_template as genai does (pyhailort.py LLM.generate checks it is a list
  of dicts and sends them as JSON strings; minja_wrapper.cpp renders them:
  _standin_template.py says how); a template that fails hailort's creation
  probe makes LLM() fail. A str prompt goes in as it is. Neither gets a BOS
  from the tokenizer: the server tokenizes without the post-processor
  (hailo-contract.md section 6).
- set_buffer needs a C-contiguous array (pyhailort.py _validate_c_contiguous);
  a run needs every input and output bound with exactly the frame size of its
  format type; format types are set before configure().

What it cannot emulate raises StandInLimitation (not a HailoRT error): pe inputs
other than FLOAT32 (the genai server sets FLOAT32, llm_server.cpp 210-235), a
mask other than UINT8 or embeddings other than UINT16, a run whose cache offset
was not moved by 1..rows tokens, pe rows whose head copies differ.
The "device" behind it is _standin_chip.py (onnxruntime on the export's
model.onnx). The export folder is $HAILO_STANDIN_EXPORT, else the HEF's folder;
the HEF file itself is only checked to exist. Network group names come from the
manifest ($HAILO_STANDIN_GROUPS overrides them, comma-separated);
$HAILO_STANDIN_NO_RESOURCE_ACCESS=1 makes HEF._get_external_resources fail.
$HAILO_STANDIN_PROMPT_LOG=<file> appends one JSON line per LLM.generate call
with the text the "device" was given (for tests to see what genai received).
"""
from __future__ import annotations

import enum
import json
import os
import time

import numpy as np

from hailo_platform.pyhailort._standin_chip import Export, KvCache, QuantParams, StandInLimitation, Tokenizer, quantize
from hailo_platform.pyhailort._standin_template import PromptTemplateHandler, TemplateError


class HailoRTException(Exception):
    pass


class HailoRTNotFoundException(HailoRTException):
    pass


class HailoRTInvalidArgumentException(HailoRTException):
    pass


class FormatType(enum.IntEnum):
    AUTO = 0
    UINT8 = 1
    UINT16 = 2
    FLOAT32 = 3


class FormatOrder(enum.IntEnum):
    AUTO = 0
    NHWC = 1


class HailoSchedulingAlgorithm(enum.IntEnum):
    NONE = 0
    ROUND_ROBIN = 1


class LLMGeneratorCompletionStatus(enum.IntEnum):
    GENERATING = 0
    MAX_TOKENS_REACHED = 1
    LOGICAL_END_OF_GENERATION = 2
    ABORTED = 3


_DTYPES = {FormatType.UINT8: np.uint8, FormatType.UINT16: np.uint16, FormatType.FLOAT32: np.float32}


class QuantInfo(QuantParams):
    pass


class _VDeviceParams:
    def __init__(self):
        self.scheduling_algorithm = HailoSchedulingAlgorithm.ROUND_ROBIN
        self.device_ids = []
        self.device_count = 1


def _export_for(hef_source):
    if not isinstance(hef_source, str):
        raise ValueError("stand-in: hef_source must be a path")
    if not os.path.isfile(hef_source):
        raise HailoRTException("Failed to open HEF file %s (HAILO_OPEN_FILE_FAILURE)" % hef_source)
    folder = os.environ.get("HAILO_STANDIN_EXPORT") or os.path.dirname(os.path.abspath(hef_source))
    return Export(folder)


class HEF:
    def __init__(self, hef_source):
        self._export = _export_for(hef_source)
        self._path = hef_source

    def get_network_group_names(self):
        return list(self._export.groups)

    def _get_external_resources(self, resource_name):
        if os.environ.get("HAILO_STANDIN_NO_RESOURCE_ACCESS"):
            # A HailoRT whose Python API cannot read resources (the method is private in 5.2.0).
            raise AttributeError("_get_external_resources")
        try:
            return self._export.resource(resource_name)
        except KeyError:
            raise HailoRTNotFoundException("Resource '%s' not found in HEF" % resource_name) from None

    def _get_external_resource_names(self):
        return ["embeddings.bin", "rope_theta_data.bin", "tokenizer.json", "hailo-config.json"]


class _Format:
    def __init__(self, type_):
        self.type = type_
        self.order = FormatOrder.NHWC


class _Stream:
    """One edge of a group: name, shape [1, rows, width], default format and quantization."""

    def __init__(self, name, rows, width, type_, quant):
        self.name, self.shape, self.type, self.quant = name, [1, rows, width], type_, quant

    def frame_bytes(self):
        return int(np.prod(self.shape)) * np.dtype(_DTYPES[self.type]).itemsize


def _group_streams(export, group):
    """The edges a compiled group has (hailo-contract.md section 10: input_layer1
    UINT16, input_layer2 UINT8, pe inputs widened to T*tiles, equal logits
    shards UINT8); rows = prefill size, 1 for the tbt group."""
    rows = 1 if group.endswith("tbt") else export.prefill
    suffixes = export.config["input_layers_names_suffixes"]
    t, n = export.t, export.n
    pe_q = QuantInfo(0.0, 2.0 / 65535, -1.0, 1.0)
    specs = {"embeddings": (export.hidden, FormatType.UINT16, export.embed_q),
             "attention_mask": (export.heads * n, FormatType.UINT8, export.mask_q),
             "pe_q_cos": (t * export.q_tiles, FormatType.UINT16, pe_q),
             "pe_q_sin": (t * export.q_tiles, FormatType.UINT16, pe_q),
             "pe_k_cos": (t * export.k_tiles, FormatType.UINT16, pe_q),
             "pe_k_sin": (t * export.k_tiles, FormatType.UINT16, pe_q)}
    inputs = {}
    for role, (width, type_, quant) in specs.items():
        name = group + "/" + suffixes[role]
        inputs[name] = (role, _Stream(name, rows, width, type_, quant))
    out_q = QuantInfo(128.0, 0.1, -12.8, 12.7)
    outputs = {}
    for i, width in enumerate(export.shards):
        name = "%s/output_layer%d" % (group, i + 1)
        outputs[name] = _Stream(name, 1, width, FormatType.UINT8, out_q)
        outputs[name].shape = [1, 1, width]
    return rows, inputs, outputs


class VDevice:
    def __init__(self, params=None, *, device_ids=None):
        if params is not None and device_ids is not None:
            raise HailoRTException("VDevice: params and device_ids exclude each other")
        self._params = params if params is not None else VDevice.create_params()
        self._caches = {}
        self._open = True

    @staticmethod
    def create_params():
        return _VDeviceParams()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.release()
        return False

    def release(self):
        self._open = False

    def _cache(self, hef_source, export):
        key = os.path.abspath(hef_source)
        if key not in self._caches:
            self._caches[key] = KvCache(export)
        return self._caches[key]

    def create_infer_model(self, hef_source, name=""):
        if not self._open:
            raise HailoRTException("VDevice was released")
        hef = HEF(hef_source)
        groups = hef.get_network_group_names()
        if name == "":
            if len(groups) != 1:
                raise HailoRTInvalidArgumentException("HEF has %d network groups; pass the name of one" % len(groups))
            name = groups[0]
        if name not in groups:
            raise HailoRTNotFoundException("Network group '%s' not found in HEF (groups: %s)"
                                           % (name, ", ".join(groups)))
        return InferModel(self, hef_source, hef, name)


class InferModel:
    class InferStream:
        def __init__(self, model, stream):
            self._model, self._stream = model, stream

        @property
        def name(self):
            return self._stream.name

        @property
        def shape(self):
            return list(self._stream.shape)

        @property
        def format(self):
            return _Format(self._stream.type)

        @property
        def quant_infos(self):
            return [self._stream.quant]

        def set_format_type(self, type):
            if self._model._configured:
                raise HailoRTException("set_format_type after configure()")
            self._stream.type = FormatType(type)

    def __init__(self, vdevice, hef_path, hef, group):
        self._vdevice, self._hef_path, self._hef, self._group = vdevice, hef_path, hef, group
        self._rows, self._inputs, self._outputs = _group_streams(hef._export, group)
        self._kv_cache = False
        self._configured = False

    @property
    def hef(self):
        return self._hef

    @property
    def input_names(self):
        return list(self._inputs)

    @property
    def output_names(self):
        return list(self._outputs)

    @property
    def inputs(self):
        return [self.InferStream(self, s) for _, s in self._inputs.values()]

    @property
    def outputs(self):
        return [self.InferStream(self, s) for s in self._outputs.values()]

    def _lookup(self, table, name, kind):
        if name == "" and len(table) == 1:
            name = next(iter(table))
        if name not in table:
            raise HailoRTNotFoundException("%s '%s' not found in network group '%s'" % (kind, name, self._group))
        return table[name]

    def input(self, name=""):
        return self.InferStream(self, self._lookup(self._inputs, name, "input")[1])

    def output(self, name=""):
        return self.InferStream(self, self._lookup(self._outputs, name, "output"))

    def set_batch_size(self, batch_size):
        if batch_size != 1:
            raise StandInLimitation("the stand-in runs batch 1 only")

    def _set_enable_kv_cache(self, enable_kv_cache):
        self._kv_cache = bool(enable_kv_cache)

    def configure(self):
        self._configured = True
        return ConfiguredInferModel(self)


class ConfiguredInferModel:
    class Bindings:
        class InferStream:
            def __init__(self, stream):
                self._stream, self._buffer = stream, None

            def set_buffer(self, buffer):
                if not buffer.flags.c_contiguous:
                    raise HailoRTException("Buffer must be C_CONTIGUOUS")
                self._buffer = buffer

            def get_buffer(self, tf_format=False):
                return self._buffer

        def __init__(self, model):
            self._model = model
            self._inputs = {n: self.InferStream(s) for n, (_, s) in model._inputs.items()}
            self._outputs = {n: self.InferStream(s) for n, s in model._outputs.items()}

        def input(self, name=""):
            return self._model._lookup(self._inputs, name, "input")

        def output(self, name=""):
            return self._model._lookup(self._outputs, name, "output")

    def __init__(self, model):
        self._model = model
        self._cache = model._vdevice._cache(model._hef_path, model._hef._export)
        self._open = True

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self._open = False

    def shutdown(self):
        self._open = False

    def create_bindings(self, input_buffers=None, output_buffers=None):
        b = self.Bindings(self._model)
        for name, buf in (input_buffers or {}).items():
            b.input(name).set_buffer(buf)
        for name, buf in (output_buffers or {}).items():
            b.output(name).set_buffer(buf)
        return b

    def _update_cache_offset(self, offset_delta_entries):
        if not self._model._kv_cache:
            raise StandInLimitation("update_cache_offset on a model without set_enable_kv_cache(True) "
                                    "(the genai server always enables it, llm_inference_manager.cpp)")
        self._cache.move(offset_delta_entries)

    def _finalize_cache(self):
        pass

    def run(self, bindings, timeout):
        if not self._open:
            raise HailoRTException("ConfiguredInferModel was shut down")
        if not isinstance(bindings, list) or len(bindings) != 1:
            raise StandInLimitation("run takes a list of bindings; the stand-in runs one frame")
        b = bindings[0]
        model = self._model
        decoded = {}
        for name, (role, stream) in model._inputs.items():
            buf = b._inputs[name]._buffer
            if buf is None:
                raise HailoRTException("Input buffer of '%s' is not set" % name)
            if buf.nbytes != stream.frame_bytes():
                raise HailoRTInvalidArgumentException("Input '%s': buffer of %d bytes, frame size is %d"
                                                      % (name, buf.nbytes, stream.frame_bytes()))
            wanted = {"embeddings": FormatType.UINT16, "attention_mask": FormatType.UINT8}.get(role, FormatType.FLOAT32)
            if stream.type != wanted:
                raise StandInLimitation("%s (%s) is %s; the stand-in emulates the genai server's formats only (%s)"
                                        % (name, role, stream.type.name, wanted.name))
            decoded[role] = np.frombuffer(buf.tobytes(), _DTYPES[stream.type]).reshape(model._rows, -1)
        for name, stream in model._outputs.items():
            buf = b._outputs[name]._buffer
            if buf is None:
                raise HailoRTException("Output buffer of '%s' is not set" % name)
            if buf.nbytes != stream.frame_bytes():
                raise HailoRTInvalidArgumentException("Output '%s': buffer of %d bytes, frame size is %d"
                                                      % (name, buf.nbytes, stream.frame_bytes()))
        logits = self._cache.run(model._rows, decoded)
        start = 0
        for name, stream in model._outputs.items():
            width = stream.shape[-1]
            part = logits[start:start + width]
            start += width
            if stream.type == FormatType.FLOAT32:
                values = part.astype(np.float32)
            else:
                values = quantize(part, stream.quant, _DTYPES[stream.type])
            np.copyto(b._outputs[name]._buffer.reshape(-1).view(_DTYPES[stream.type]), values)


class LLMGeneratorCompletion:
    def __init__(self, pieces):
        self._pieces = list(pieces)
        self._next = 0
        self._status = (LLMGeneratorCompletionStatus.GENERATING if self._pieces
                        else LLMGeneratorCompletionStatus.MAX_TOKENS_REACHED)

    def release(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.release()
        return False

    @property
    def generation_status(self):
        return self._status

    def read(self, timeout_ms=10000):
        if self._next >= len(self._pieces):
            raise HailoRTException("read after the end of generation")
        piece, stop = self._pieces[self._next]
        self._next += 1
        if self._next == len(self._pieces):
            self._status = (LLMGeneratorCompletionStatus.LOGICAL_END_OF_GENERATION if stop
                            else LLMGeneratorCompletionStatus.MAX_TOKENS_REACHED)
        time.sleep(0.001)  # a measurable time per token
        return piece

    def read_all(self, timeout_ms=10000):
        return "".join(self.read(timeout_ms) for _ in range(len(self._pieces) - self._next))

    def __iter__(self):
        return self

    def __next__(self):
        if self.generation_status != LLMGeneratorCompletionStatus.GENERATING:
            raise StopIteration("Generation complete")
        return self.read()


def _find_group(groups, suffix):
    for g in groups:
        if g.endswith(suffix):
            return g
    return None


_kv_cache_user = [None]  # the device's one KV-cache owner (hailort_server.cpp VDeviceManager::mark_kv_cache_in_use)


class LLM:
    def __init__(self, vdevice, model_path, lora_name="", optimize_memory_on_device=False):
        if vdevice._params.scheduling_algorithm == HailoSchedulingAlgorithm.NONE:
            raise HailoRTException("GenAI requires a VDevice with the scheduler enabled")
        if _kv_cache_user[0] is not None:
            raise HailoRTException("Failed to mark KV-Cache in use. KV-Cache is already in use by another model!")
        hef = HEF(model_path)
        export = hef._export
        groups = hef.get_network_group_names()
        # llm_server.cpp get_prefill_model_name_suffix / get_tbt_model_name_suffix
        prefix = (lora_name or "base_model") + "__" if len(groups) > 2 else ""
        prefill_suffix = prefix + "prefill"
        self._prefill = _find_group(groups, prefill_suffix)
        if self._prefill is None:
            raise HailoRTException("Model doesnt have NG with name-suffix '%s'" % prefill_suffix)
        self._tbt = _find_group(groups, prefix + "tbt") if len(groups) != 1 else None
        suffixes = export.config.get("input_layers_names_suffixes", {})
        for g in filter(None, (self._prefill, self._tbt)):
            _, inputs, _ = _group_streams(export, g)
            names = list(inputs)
            for role in ("embeddings", "attention_mask", "pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin"):
                suffix = suffixes.get(role, "input_layer%d" % (1 + ["embeddings", "attention_mask", "pe_q_cos",
                                                                    "pe_q_sin", "pe_k_cos", "pe_k_sin"].index(role)))
                if not any(n.endswith(suffix) for n in names):
                    raise HailoRTException("Failed to find layer with suffix '%s' in group '%s'" % (suffix, g))
        self._export = export
        self._tokenizer = Tokenizer(export.tokenizer_json)
        try:
            # llm.cpp LLM::create: the handler is built (and its TMP probe rendered) at creation.
            self._template = PromptTemplateHandler(export.config.get("chat_template", ""))
        except TemplateError as e:
            raise HailoRTException("Failed to create LLM (%s)" % e) from None
        self._context = []
        self._open = True
        _kv_cache_user[0] = self

    def release(self):
        self._open = False
        if _kv_cache_user[0] is self:
            _kv_cache_user[0] = None

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.release()
        return False

    def tokenize(self, text):
        return self._tokenizer.encode(text)

    def max_context_capacity(self):
        return int(self._export.config.get("pre_process_params", {}).get("kv_cache_size", 2048))

    def get_context_usage_size(self):
        return len(self._context)

    def clear_context(self):
        self._context = []
        self._template.reset_state()

    def prompt_template(self):
        if not self._template.template:
            raise HailoRTException("Prompt handler is not initialized. "
                                   "This may happen if the prompt_template is not defined.")
        return self._template.template

    def generate(self, prompt, tools=None, temperature=None, top_p=None, top_k=None, frequency_penalty=None,
                 max_generated_tokens=None, do_sample=None, seed=None):
        """Greedy decoding on the stand-in chip (do_sample, temperature and the
        other sampling parameters are accepted and ignored)."""
        if not self._open:
            raise HailoRTException("LLM was released")
        if not isinstance(prompt, str):
            text = self._render(prompt, tools)
        elif tools:
            raise StandInLimitation("tools come with a list of messages only in the stand-in")
        else:
            text = prompt
        if not text:
            raise HailoRTException("Prompt cannot be empty")
        log = os.environ.get("HAILO_STANDIN_PROMPT_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"messages": not isinstance(prompt, str), "text": text}) + "\n")
        e = self._export
        if max_generated_tokens is None:
            max_generated_tokens = int(e.config.get("default_generation_params", {}).get("max_new_tokens", 1024))
        stops = set(e.config.get("stop_token_id", []))
        tokens = self._context + self.tokenize(text)
        pieces = []
        while len(pieces) < max_generated_tokens and len(tokens) < e.n:
            nxt = int(np.argmax(e.logits(e.prompt_rows(tokens))))
            tokens.append(nxt)
            stop = nxt in stops
            pieces.append((self._tokenizer.decode(nxt), stop))
            if stop:
                break
        self._context = tokens
        return LLMGeneratorCompletion(pieces)

    @staticmethod
    def _json_strings(items, item_name):
        # pyhailort.py LLM._convert_to_json_strings
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise HailoRTException("%s must be a list of dicts" % item_name)
        return [json.dumps(i) for i in items]

    def _render(self, prompt, tools):
        messages = self._json_strings(prompt, "prompt")
        tools_json = self._json_strings(tools, "tools") if tools is not None else []
        if not messages:
            raise HailoRTException("Prompt cannot be empty")
        try:
            return self._template.render(messages, tools_json)
        except TemplateError as e:
            raise HailoRTException(str(e)) from None

    def generate_all(self, prompt, tools=None, temperature=None, top_p=None, top_k=None, frequency_penalty=None,
                     max_generated_tokens=None, do_sample=None, seed=None, timeout_ms=600000):
        with self.generate(prompt, tools, temperature, top_p, top_k, frequency_penalty, max_generated_tokens,
                           do_sample, seed) as gen:
            return gen.read_all(timeout_ms)


__all__ = ["HEF", "VDevice", "InferModel", "ConfiguredInferModel", "LLM", "LLMGeneratorCompletion", "FormatType",
           "FormatOrder", "HailoSchedulingAlgorithm", "HailoRTException", "HailoRTNotFoundException", "QuantInfo",
           "StandInLimitation"]
