"""A cuTile kernel run by tilecore: row softmax on numpy arrays, checked against numpy.

Usage: python examples/cutile_softmax.py     (any machine: no GPU needed; needs cuda-tile)

The kernel is ordinary cuTile Python. ``tilecore.cutile.launch`` takes the arguments ``ct.launch``
takes; with numpy arrays the kernel is exported by cuTile, compiled by tilecore and run in its CPU
emulator, and ``y`` is written in place. With CuPy / PyTorch CUDA tensors (and ``pip install
tilecore[cuda]``) the same call runs the cubin on the GPU.
"""

import cuda.tile as ct
import numpy as np

import tilecore.cutile


@ct.kernel
def softmax(x, y, ROWS: ct.Constant[int], N: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(ROWS, N), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(bid, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


def main() -> None:
    rows, n, tile_rows = 100, 256, 4
    x = np.random.default_rng(0).standard_normal((rows, n)).astype(np.float32)
    y = np.zeros_like(x)
    grid = (-(-rows // tile_rows),)  # one tile block per 4 rows; the last one is partial
    tilecore.cutile.launch(None, grid, softmax, (x, y, tile_rows, n))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    kernel = tilecore.cutile.compile(softmax, (x, y, tile_rows, n))
    print(f"softmax {rows}x{n} on the CPU emulator ({kernel.gpu_name}, {kernel.threads_per_cta} threads/CTA): "
          f"max abs error vs numpy {np.abs(y - want).max():.2e}")


if __name__ == "__main__":
    main()
