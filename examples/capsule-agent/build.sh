#!/bin/sh
# Builds the example capsule's module and pins its hash in capsule.toml.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir"
GOOS=wasip1 GOARCH=wasm go build -o agent.wasm .
sum=$(sha256sum agent.wasm 2>/dev/null || shasum -a 256 agent.wasm)
sum=${sum%% *}
sed "s/^sha256 = .*/sha256 = \"$sum\"/" capsule.toml > capsule.toml.new && mv capsule.toml.new capsule.toml
echo "built $dir/agent.wasm ($sum)"
