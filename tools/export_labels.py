#!/usr/bin/env python3
"""Write models/imagenet_labels.txt: the 1000 ImageNet-1k class names, one per line, in index
order, taken from torchvision's own list (the `categories` of its ImageNet weights' meta)."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "models", "imagenet_labels.txt")


def imagenet_categories():
    import torchvision
    from torchvision.models import ResNet18_Weights
    cats = list(ResNet18_Weights.IMAGENET1K_V1.meta["categories"])
    if len(cats) != 1000 or any("\n" in c or c != c.strip() or not c for c in cats):
        raise SystemExit("export_labels: unexpected category list from torchvision")
    return cats, torchvision.__version__


def main():
    cats, version = imagenet_categories()
    text = "".join(c + "\n" for c in cats)
    if os.path.exists(OUT) and open(OUT, encoding="utf-8").read() == text:
        print(f"{OUT} is up to date ({len(cats)} labels, torchvision {version})")
        return 0
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {OUT}: {len(cats)} labels from torchvision {version}")
    return 0


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    sys.exit(main())
