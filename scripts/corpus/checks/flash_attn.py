#!/usr/bin/env python3
# needs: pytest einops
"""GPU correctness checks for the flash-attn 2.8.3.post2 wheel (flash_attn_2_cuda, sm_90).

A slice of flash-attn's own tests (tests/test_flash_attn.py in its sdist), each test function
called with chosen parameters. Every one of them compares the CUDA kernels, forward and backward,
with the file's own reference attention (`attention_ref`, plain PyTorch), within the file's own
tolerances:
- test_flash_attn_output and test_flash_attn_varlen_output: head dims 32, 64, 128 and 256, causal
  and not, fp16 and bf16, MHA and GQA, two sequence-length pairs (one ragged), no dropout; plus
  dropout, sliding-window (local), ALiBi and softcap cases at head dim 128;
- test_flash_attn_splitkv (the split-KV forward) and test_flash_attn_kvcache (a paged KV cache
  with new keys appended) at head dims 64 and 128.
The sdist's test file is not in the wheel: name it in FLASH_ATTN_TESTS, e.g.
  FLASH_ATTN_TESTS=DIR/test_flash_attn.py bash scripts/corpus/gpu.sh DIR flash_attn
A test that calls pytest.skip() for its parameters is counted as skipped, not passed.
Prints one line per call and exits 1 if any failed.
"""
import importlib.util
import itertools
import os
import sys
import traceback

_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

import torch  # noqa: E402

PKG = 'flash_attn'
results, skipped = [], []


def load_tests():
    path = os.environ.get('FLASH_ATTN_TESTS', '')
    if not os.path.isfile(path):
        raise SystemExit(f"flash_attn check: FLASH_ATTN_TESTS={path!r} is not a file; set it to "
                         "the sdist's tests/test_flash_attn.py")
    spec = importlib.util.spec_from_file_location('upstream_test_flash_attn', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(name, fn, **kw):
    import pytest
    label = name + '[' + ','.join(f'{k}={v}' for k, v in kw.items()) + ']'
    try:
        fn(**kw)
        ok = True
    except pytest.skip.Exception as e:
        print(f'{label}: SKIP {e}', flush=True)
        skipped.append(label)
        return
    except Exception:
        traceback.print_exc(file=sys.stdout)
        ok = False
    print(f'{label}: {"PASS" if ok else "FAIL"}', flush=True)
    results.append(ok)


def main():
    assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'
    print(f'  torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}')
    import flash_attn
    print(f'  flash_attn {flash_attn.__version__} from {flash_attn.__file__}')
    t = load_tests()
    fp16, bf16 = torch.float16, torch.bfloat16
    base = dict(dropout_p=0.0, local=False, alibi=False, deterministic=False, kvpacked=False,
                softcap=0.0)
    for test in ('test_flash_attn_output', 'test_flash_attn_varlen_output'):
        fn = getattr(t, test)
        for d, causal, dtype, mha_type, (sq, sk) in itertools.product(
                (32, 64, 128, 256), (False, True), (fp16, bf16), ('mha', 'gqa'),
                ((113, 203), (1024, 1023))):
            call(test, fn, **{**base, 'seqlen_q': sq, 'seqlen_k': sk, 'd': d, 'causal': causal,
                              'dtype': dtype, 'mha_type': mha_type})
        for extra in (dict(dropout_p=0.17), dict(local=True), dict(alibi=True),
                      dict(softcap=50.0), dict(kvpacked=True), dict(deterministic=True)):
            for causal in (False, True):
                call(test, fn, **{**base, 'seqlen_q': 256, 'seqlen_k': 512, 'd': 128,
                                  'causal': causal, 'dtype': bf16, 'mha_type': 'mha', **extra})
    for d, causal, dtype in itertools.product((64, 128), (False, True), (fp16, bf16)):
        call('test_flash_attn_splitkv', t.test_flash_attn_splitkv, seqlen_q=1, seqlen_k=339,
             swap_sq_sk=False, d=d, causal=causal, local=False, alibi=False, deterministic=False,
             dtype=dtype)
    for d, causal in itertools.product((64, 128), (False, True)):  # the file tests fp16 only
        call('test_flash_attn_kvcache', t.test_flash_attn_kvcache, seqlen_q=1, seqlen_k=339, d=d,
             has_batch_idx=False, has_leftpad=False, paged_kv_block_size=256,
             rotary_fraction=0.0, rotary_interleaved=False, seqlen_new_eq_seqlen_q=True,
             causal=causal, local=False, alibi=False, new_kv=True, mha_type='mha',
             num_splits=0, dtype=fp16)
    print(f'{PKG}: {sum(results)}/{len(results)} checks passed ({len(skipped)} skipped by the '
          'tests themselves)')
    return 0 if results and all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
