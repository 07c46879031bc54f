"""own_vocab_model.py -- a user's own PyTorch LSTM with its own 37-token vocabulary of film-review
words (no "lecture", no [UNK]), exported with tools/export_classifier.py as DIR/lstm-seed1.json:
the fixture of the serve tests for a weights file's own vocabulary (tests/serve/own_vocab.py,
tests/serve/e2e.py). Needs /usr/bin/python3 with torch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

WORDS = ["<pad>", "the", "film", "movie", "plot", "acting", "music", "ending", "story", "was",
         "is", "felt", "seemed", "very", "quite", "not", "never", "great", "good", "wonderful",
         "moving", "funny", "bad", "dull", "boring", "awful", "weak", "and", "but", "although",
         "really", "a", "bit", "too", "long", "so", "slow"]


def make(directory, seed=1):
    """Writes directory/lstm-seed1.json; returns its path."""
    import export_classifier  # noqa: E402 -- sets attn's OpenBLAS kernels before torch
    import torch
    import torch.nn as nn

    class Review(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(len(WORDS), 16)
            self.cell = nn.LSTM(16, 32, batch_first=True)
            self.out = nn.Linear(32, 1)

    torch.manual_seed(seed)
    path = os.path.join(directory, "lstm-seed1.json")
    export_classifier.export(Review().eval(), WORDS, path, pad_token="<pad>")
    return path
