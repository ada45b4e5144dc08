package grpcgo

import (
	"errors"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestDoneInfoCarriesCodeAndTrailer(t *testing.T) {
	md := metadata.Pairs("X-Shard", "7", "x-shard", "8")
	for _, tc := range []struct {
		in        balancer.DoneInfo
		wantErr   bool
		wantCode  codes.Code
		wantShard string
	}{
		{in: balancer.DoneInfo{}, wantCode: codes.OK},
		{in: balancer.DoneInfo{Trailer: md}, wantCode: codes.OK, wantShard: "7"},
		{in: balancer.DoneInfo{Err: status.Error(codes.Unavailable, "down"), Trailer: md}, wantErr: true, wantCode: codes.Unavailable, wantShard: "7"},
		{in: balancer.DoneInfo{Err: errors.New("plain")}, wantErr: true, wantCode: codes.Unknown},
	} {
		got := toDoneInfo(tc.in)
		if (got.Err != nil) != tc.wantErr || got.Status != int(tc.wantCode) {
			t.Errorf("toDoneInfo(%+v) = err %v status %d, want err %v status %d", tc.in, got.Err, got.Status, tc.wantErr, tc.wantCode)
		}
		shard := ""
		if got.Metadata != nil {
			shard = got.Metadata.Get("x-shard")
		}
		if shard != tc.wantShard || (tc.in.Trailer == nil) != (got.Metadata == nil) {
			t.Errorf("toDoneInfo(%+v): Metadata.Get(x-shard) = %q (metadata %v), want %q", tc.in, shard, got.Metadata, tc.wantShard)
		}
	}
}
