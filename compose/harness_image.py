"""Steps of `compose/harness.Dockerfile` that need more than a shell line (the legacy builder has no
heredocs): `go VERSION` unpacks Go from the Go module proxy into /usr/local/go. (The Python dependencies come
from the lock, harness/lock/requirements.txt.)"""

import io
import os
import sys
import urllib.request
import zipfile


def install_go(version: str, root: str = "/usr/local/go") -> None:
    module = f"golang.org/toolchain@v0.0.1-go{version}.linux-amd64"
    url = f"https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go{version}.linux-amd64.zip"
    data = urllib.request.urlopen(url, timeout=300).read()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.is_dir() or not info.filename.startswith(module + "/"):
                continue
            target = os.path.join(root, info.filename[len(module) + 1:])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as out:
                out.write(archive.read(info))
            os.chmod(target, (info.external_attr >> 16) & 0o777 or 0o644)


if __name__ == "__main__":
    if sys.argv[1:2] == ["go"] and len(sys.argv) == 3:
        install_go(sys.argv[2])
    else:
        sys.exit("usage: harness_image.py go VERSION")
