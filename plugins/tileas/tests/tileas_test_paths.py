"""Paths the tileas tests share: the visible TileIR corpus lives in ../shared beside the repository."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VISIBLE_CORPUS = os.path.join(os.path.dirname(REPO), "shared", "corpus", "visible")
