"""Export the test models with torch.onnx.export (the CPU torch wheel).

    pip install torch==2.13.0      # the CPU build; see README
    python tests/models/export_torch_models.py

Writes resnet18.onnx, mobilenet_v2.onnx and bert_encoder.onnx beside this
file with their weights *stripped* (initializer shapes kept, data removed):
the tests fill every initializer with seeded random values
(`tests/unit/models.py`), so the repository carries kilobytes, not the
~60 MB of weights, and these models need no torch at test time (the
exported corpus, tests/models/corpus.py, does). The architectures are written
out here (torchvision does not import beside this torch wheel).
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import torch
from torch import nn

HERE = Path(__file__).parent


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    SETTINGS = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(self, classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, 32, 3, 2, 1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU6(),
        ]
        cin = 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class BertEncoder(nn.Module):
    """BERT-mini shaped: token + position embeddings, LayerNorm, 4 post-norm
    encoder layers (hidden 256, 4 heads, GELU FFN 1024), a pooled output."""

    def __init__(
        self,
        vocab: int = 1000,
        hidden: int = 256,
        layers: int = 4,
        heads: int = 4,
        max_len: int = 512,
    ):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden)
        layer = nn.TransformerEncoderLayer(
            hidden, heads, hidden * 4, dropout=0.0, activation="gelu", batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.encoder(self.norm(self.tok(ids) + self.pos(positions)))
        return h, torch.tanh(self.pool(h[:, 0]))


def strip_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop initializer data, keep names, types and shapes (tests refill them)."""
    for t in model.graph.initializer:
        if len(t.dims) and int(torch.tensor(list(t.dims)).prod()) > 16:
            dims, dtype, name = list(t.dims), t.data_type, t.name
            t.Clear()
            t.name, t.data_type = name, dtype
            t.dims.extend(dims)
            t.doc_string = "vknn:stripped"
    return model


def export(
    module: nn.Module, args: tuple, name: str, inputs: list[str], outputs: list[str], dynamic: dict
) -> None:
    path = HERE / f"{name}.onnx"
    module.eval()
    torch.onnx.export(
        module,
        args,
        str(path),
        input_names=inputs,
        output_names=outputs,
        dynamic_axes=dynamic,
        opset_version=17,
        dynamo=False,
    )
    model = onnx.load(str(path))
    onnx.save(strip_weights(model), str(path))
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(model.graph.node)} nodes)")


def main() -> int:
    torch.manual_seed(0)
    img = torch.randn(1, 3, 224, 224)
    export(ResNet18(), (img,), "resnet18", ["input"], ["logits"], {"input": {0: "batch"}})
    export(MobileNetV2(), (img,), "mobilenet_v2", ["input"], ["logits"], {"input": {0: "batch"}})
    ids = torch.randint(0, 1000, (1, 128))
    export(
        BertEncoder(),
        (ids,),
        "bert_encoder",
        ["input_ids"],
        ["hidden", "pooled"],
        {"input_ids": {0: "batch", 1: "seq"}},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
