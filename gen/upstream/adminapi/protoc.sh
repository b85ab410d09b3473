#!/bin/sh
# Regenerates the Go code of openapi/proto/ with protoc and the plugins pinned in go.mod.
set -eu
cd "$(dirname "$0")"
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler libprotobuf-dev" >&2; exit 1; }
[ -f /usr/include/google/protobuf/duration.proto ] || { echo "protoc's well-known types are missing: apt-get install -y libprotobuf-dev" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc
find . -name '*.pb.go' -delete
root=../../../openapi/proto
module=github.com/validator-manager/validator-manager/gen/upstream/adminapi
# Sorted file list: the output does not depend on the directory order.
files=$(cd "$root" && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
(cd "$root" && PATH="$bin:$PATH" protoc -I . \
  --go_out="$OLDPWD" --go_opt=module=$module \
  --go-grpc_out="$OLDPWD" --go-grpc_opt=module=$module \
  $files)
