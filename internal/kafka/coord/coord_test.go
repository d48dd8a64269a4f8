package coord

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// fixtureRoot is the repository's real Kafka fixtures (testdata/kafka);
// this package is internal/kafka/coord below the root.
const fixtureRoot = "../../../testdata/kafka"

type fixtureRecord struct {
	file       string
	offset     int64
	key, value []byte
}

// offsetsFixtureRecords returns every record of every __consumer_offsets
// log in the fixtures, failing the test when the fixtures are missing.
func offsetsFixtureRecords(t testing.TB) (map[string][]fixtureRecord, map[string]int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureRoot, "*", "__consumer_offsets-*", "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no __consumer_offsets fixtures under %s (testdata/kafka, see its README): %v", fixtureRoot, err)
	}
	sort.Strings(files)
	recs := map[string][]fixtureRecord{}
	batches := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, fixtureRoot+"/")
		sc := kafka.NewScannerVerify(data)
		for sc.Next() {
			batches[name]++
			b, err := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, r := range b.Records {
				recs[name] = append(recs[name], fixtureRecord{name, r.Offset, r.Key, r.Value})
			}
		}
		if sc.Err() != nil {
			t.Fatalf("%s: %v", name, sc.Err())
		}
	}
	return recs, batches
}

// TestConsumerOffsets18 decodes the README's reference partition: 277
// batches, 499 records, OffsetCommit (key type 1) and GroupMetadata (key
// type 2) records, all values version 3.
func TestConsumerOffsets18(t *testing.T) {
	recs, batches := offsetsFixtureRecords(t)
	const name = "kafka-uncompacted/__consumer_offsets-18/00000000000000000000.log"
	if batches[name] != 277 || len(recs[name]) != 499 {
		t.Fatalf("%s: %d batches / %d records, want 277 / 499", name, batches[name], len(recs[name]))
	}
	types := map[int16]int{}
	versions := map[int16]int{}
	groups := map[string]bool{}
	for _, fr := range recs[name] {
		r, err := DecodeOffsetsRecord(fr.key, fr.value)
		if err != nil {
			t.Fatalf("offset %d: %v", fr.offset, err)
		}
		types[r.Type]++
		switch {
		case r.OffsetCommitValue != nil:
			versions[r.OffsetCommitValue.Version]++
			groups[r.OffsetCommitKey.Group] = true
			if r.OffsetCommitValue.CommitTimestamp < 1_500_000_000_000 {
				t.Errorf("offset %d: commit timestamp %d", fr.offset, r.OffsetCommitValue.CommitTimestamp)
			}
		case r.GroupMetadataValue != nil:
			versions[r.GroupMetadataValue.Version]++
			groups[r.GroupMetadataKey.Group] = true
		default:
			t.Errorf("offset %d: unexpected record %s", fr.offset, r)
		}
	}
	if !reflect.DeepEqual(types, map[int16]int{1: 483, 2: 16}) {
		t.Errorf("key types %v, want 483 of type 1 and 16 of type 2", types)
	}
	if !reflect.DeepEqual(versions, map[int16]int{3: 499}) {
		t.Errorf("value versions %v, want all 3", versions)
	}
	if len(groups) == 0 {
		t.Error("no groups")
	}
}

// TestOffsetsFixturesRoundTrip decodes every __consumer_offsets record of
// the fixtures, re-encodes it to the broker's bytes, and checks kmsg
// reads the same fields.
func TestOffsetsFixturesRoundTrip(t *testing.T) {
	recs, _ := offsetsFixtureRecords(t)
	total, tombstones, members := 0, 0, 0
	for name, list := range recs {
		for _, fr := range list {
			total++
			r, err := DecodeOffsetsRecord(fr.key, fr.value)
			if err != nil {
				t.Fatalf("%s@%d: %v", name, fr.offset, err)
			}
			if r.Tombstone {
				tombstones++
			}
			k, v, err := r.Encode()
			if err != nil {
				t.Fatalf("%s@%d: encode: %v", name, fr.offset, err)
			}
			if !bytes.Equal(k, fr.key) || !bytes.Equal(v, fr.value) || (v == nil) != (fr.value == nil) {
				t.Errorf("%s@%d: re-encoding differs\nkey %x\n    %x\nval %x\n    %x", name, fr.offset, k, fr.key, v, fr.value)
			}
			if s := r.String(); s == "" || strings.Contains(s, "unknown") {
				t.Errorf("%s@%d: String %q", name, fr.offset, s)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s@%d: json: %v", name, fr.offset, err)
			}
			switch {
			case r.OffsetCommitKey != nil:
				var fk kmsg.OffsetCommitKey
				if err := fk.ReadFrom(fr.key); err != nil || fk.Group != r.OffsetCommitKey.Group || fk.Topic != r.OffsetCommitKey.Topic || fk.Partition != r.OffsetCommitKey.Partition {
					t.Errorf("%s@%d: kmsg key %+v %v", name, fr.offset, fk, err)
				}
				if v := r.OffsetCommitValue; v != nil {
					var fv kmsg.OffsetCommitValue
					if err := fv.ReadFrom(fr.value); err != nil || fv.Offset != v.Offset || fv.LeaderEpoch != v.LeaderEpoch || fv.Metadata != v.Metadata || fv.CommitTimestamp != v.CommitTimestamp {
						t.Errorf("%s@%d: kmsg value %+v %v", name, fr.offset, fv, err)
					}
				}
			case r.GroupMetadataKey != nil:
				if v := r.GroupMetadataValue; v != nil {
					members += len(v.Members)
					var fv kmsg.GroupMetadataValue
					if err := fv.ReadFrom(fr.value); err != nil || fv.ProtocolType != v.ProtocolType || fv.Generation != v.Generation || len(fv.Members) != len(v.Members) {
						t.Errorf("%s@%d: kmsg value %+v %v", name, fr.offset, fv, err)
						continue
					}
					for i, m := range fv.Members {
						if m.MemberID != v.Members[i].MemberID || m.ClientHost != v.Members[i].ClientHost || !bytes.Equal(m.Assignment, v.Members[i].Assignment) {
							t.Errorf("%s@%d: member %d differs", name, fr.offset, i)
						}
					}
				}
			}
		}
	}
	if tombstones == 0 || members == 0 {
		t.Errorf("fixtures gave %d records, %d tombstones, %d members: expected some of each", total, tombstones, members)
	}
}

func ptr[T any](v T) *T { return &v }

// TestOffsetsAgainstKmsg encodes every version with kmsg and with us, in
// both directions.
func TestOffsetsAgainstKmsg(t *testing.T) {
	for _, ver := range []int16{0, 1} {
		fk := kmsg.OffsetCommitKey{Version: ver, Group: "grp", Topic: "orders", Partition: 17}
		ours := OffsetCommitKey{Version: ver, Group: "grp", Topic: "orders", Partition: 17}
		ob, err := ours.Encode()
		if err != nil || !bytes.Equal(ob, fk.AppendTo(nil)) {
			t.Errorf("key v%d: %x vs kmsg %x (%v)", ver, ob, fk.AppendTo(nil), err)
		}
		if got, err := DecodeOffsetCommitKey(fk.AppendTo(nil)); err != nil || got != ours {
			t.Errorf("key v%d from kmsg: %+v %v", ver, got, err)
		}
	}
	for ver := int16(0); ver <= 4; ver++ {
		fv := kmsg.NewOffsetCommitValue()
		fv.Version, fv.Offset, fv.Metadata, fv.CommitTimestamp = ver, 12345, "meta", 1_700_000_000_000
		fv.LeaderEpoch, fv.ExpireTimestamp = 9, 1_800_000_000_000
		ours := OffsetCommitValue{Version: ver, Offset: 12345, LeaderEpoch: -1, Metadata: "meta", CommitTimestamp: 1_700_000_000_000, ExpireTimestamp: -1}
		if ver >= 3 {
			ours.LeaderEpoch = 9
		}
		if ver == 1 {
			ours.ExpireTimestamp = 1_800_000_000_000
		}
		ob, err := ours.Encode()
		if err != nil || !bytes.Equal(ob, fv.AppendTo(nil)) {
			t.Errorf("offset value v%d: %x vs kmsg %x (%v)", ver, ob, fv.AppendTo(nil), err)
		}
		got, err := DecodeOffsetCommitValue(fv.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(got, ours) {
			t.Errorf("offset value v%d from kmsg: %+v %v", ver, got, err)
		}
		var back kmsg.OffsetCommitValue
		if err := back.ReadFrom(ob); err != nil || back.Offset != 12345 || back.Metadata != "meta" {
			t.Errorf("kmsg reading our v%d: %+v %v", ver, back, err)
		}
	}
	// A v4 value with a tagged field we do not name (kmsg calls tag 0
	// TopicID) survives a round trip byte for byte.
	fv := kmsg.NewOffsetCommitValue()
	fv.Version, fv.TopicID = 4, [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	raw := fv.AppendTo(nil)
	got, err := DecodeOffsetCommitValue(raw)
	if err != nil || len(got.UnknownTags) != 1 || got.UnknownTags[0].Tag != 0 || len(got.UnknownTags[0].Data) != 16 {
		t.Fatalf("v4 with tag 0: %+v %v", got, err)
	}
	if re, _ := got.Encode(); !bytes.Equal(re, raw) {
		t.Errorf("v4 with tag 0 re-encoding %x, want %x", re, raw)
	}

	gk := kmsg.GroupMetadataKey{Version: 2, Group: "grp"}
	if ob, _ := (GroupMetadataKey{Group: "grp"}).Encode(); !bytes.Equal(ob, gk.AppendTo(nil)) {
		t.Errorf("group key %x vs %x", ob, gk.AppendTo(nil))
	}
	for ver := int16(0); ver <= 4; ver++ {
		fv := kmsg.NewGroupMetadataValue()
		fv.Version, fv.ProtocolType, fv.Generation, fv.Protocol, fv.Leader, fv.CurrentStateTimestamp = ver, "consumer", 7, ptr("range"), ptr("m-1"), 1_700_000_000_000
		fv.Members = []kmsg.GroupMetadataValueMember{
			{MemberID: "m-1", InstanceID: ptr("inst"), ClientID: "c1", ClientHost: "/10.0.0.1", RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000, Subscription: []byte{0, 1, 2}, Assignment: []byte{}},
			{MemberID: "m-2", ClientID: "c2", ClientHost: "/10.0.0.2", RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000, Subscription: []byte{9}, Assignment: []byte{8, 8}},
		}
		ours := GroupMetadataValue{Version: ver, ProtocolType: "consumer", Generation: 7, Protocol: ptr("range"), Leader: ptr("m-1"), CurrentStateTimestamp: -1,
			Members: []MemberMetadata{
				{MemberID: "m-1", ClientID: "c1", ClientHost: "/10.0.0.1", RebalanceTimeout: -1, SessionTimeout: 45000, Subscription: []byte{0, 1, 2}, Assignment: []byte{}},
				{MemberID: "m-2", ClientID: "c2", ClientHost: "/10.0.0.2", RebalanceTimeout: -1, SessionTimeout: 45000, Subscription: []byte{9}, Assignment: []byte{8, 8}},
			}}
		if ver >= 1 {
			ours.Members[0].RebalanceTimeout, ours.Members[1].RebalanceTimeout = 300000, 300000
		}
		if ver >= 2 {
			ours.CurrentStateTimestamp = 1_700_000_000_000
		}
		if ver >= 3 {
			ours.Members[0].GroupInstanceID = ptr("inst")
		}
		ob, err := ours.Encode()
		if err != nil || !bytes.Equal(ob, fv.AppendTo(nil)) {
			t.Errorf("group value v%d:\n ours %x\n kmsg %x (%v)", ver, ob, fv.AppendTo(nil), err)
		}
		got, err := DecodeGroupMetadataValue(fv.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(got, ours) {
			t.Errorf("group value v%d from kmsg:\n%+v\n%+v %v", ver, got, ours, err)
		}
	}
}

func TestTxnAgainstKmsg(t *testing.T) {
	fk := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "tx-1"}
	if ob, _ := (TransactionLogKey{TransactionalID: "tx-1"}).Encode(); !bytes.Equal(ob, fk.AppendTo(nil)) {
		t.Errorf("txn key %x vs %x", ob, fk.AppendTo(nil))
	}
	for ver := int16(0); ver <= 1; ver++ {
		for _, status := range []TxnStatus{TxnEmpty, TxnOngoing, TxnPrepareEpochFence} {
			fv := kmsg.NewTxnMetadataValue()
			fv.Version, fv.ProducerID, fv.ProducerEpoch, fv.TimeoutMillis, fv.State = ver, 4000, 3, 60000, kmsg.TransactionState(status)
			fv.LastUpdateTimestamp, fv.StartTimestamp = 1_700_000_000_500, 1_700_000_000_000
			ours := NewTransactionLogValue(ver)
			ours.ProducerID, ours.ProducerEpoch, ours.TransactionTimeoutMs, ours.TransactionStatus = 4000, 3, 60000, status
			ours.LastUpdateTimestampMs, ours.StartTimestampMs = 1_700_000_000_500, 1_700_000_000_000
			if status != TxnEmpty {
				fv.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{0, 5}}, {Topic: "audit", Partitions: []int32{}}}
				ours.TransactionPartitions = []TxnPartitions{{Topic: "orders", PartitionIDs: []int32{0, 5}}, {Topic: "audit", PartitionIDs: []int32{}}}
			}
			if ver == 1 {
				fv.PreviousProducerID, fv.NextProducerID, fv.ClientTransactionVersion = 3999, 4001, 2
				ours.PreviousProducerID, ours.NextProducerID, ours.ClientTransactionVersion = 3999, 4001, 2
			}
			want := fv.AppendTo(nil)
			ob, err := ours.Encode()
			if err != nil || !bytes.Equal(ob, want) {
				t.Errorf("txn value v%d %s:\n ours %x\n kmsg %x (%v)", ver, status, ob, want, err)
			}
			got, err := DecodeTransactionLogValue(want)
			if err != nil || !reflect.DeepEqual(got, ours) {
				t.Errorf("txn value v%d %s from kmsg:\n%+v\n%+v %v", ver, status, got, ours, err)
			}
			var back kmsg.TxnMetadataValue
			if err := back.ReadFrom(ob); err != nil || back.ProducerID != 4000 || int8(back.State) != int8(status) || len(back.Topics) != len(ours.TransactionPartitions) {
				t.Errorf("kmsg reading our v%d: %+v %v", ver, back, err)
			}
		}
	}
	// kmsg's NextProducerEpoch (tag 3, newer than Kafka 4.0's schema) is
	// kept raw and written back.
	fv := kmsg.NewTxnMetadataValue()
	fv.Version, fv.State, fv.NextProducerEpoch = 1, kmsg.TransactionState(TxnCompleteCommit), 5
	raw := fv.AppendTo(nil)
	got, err := DecodeTransactionLogValue(raw)
	if err != nil || len(got.UnknownTags) != 1 || got.UnknownTags[0].Tag != 3 {
		t.Fatalf("tag 3: %+v %v", got, err)
	}
	if re, _ := got.Encode(); !bytes.Equal(re, raw) {
		t.Errorf("tag 3 re-encoding %x, want %x", re, raw)
	}
}

func TestTxnRecordForms(t *testing.T) {
	v := NewTransactionLogValue(0)
	v.ProducerID, v.ProducerEpoch, v.TransactionTimeoutMs, v.TransactionStatus = 7, 1, 60000, TxnOngoing
	v.TransactionPartitions = []TxnPartitions{{Topic: "t", PartitionIDs: []int32{0, 1}}}
	v.LastUpdateTimestampMs = 99
	k, _ := TransactionLogKey{TransactionalID: "app-1"}.Encode()
	vb, _ := v.Encode()
	r, err := DecodeTxnRecord(k, vb)
	if err != nil {
		t.Fatal(err)
	}
	want := "key: transaction_metadata::transactionalId=app-1 payload: producerId:7,producerEpoch:1,state=Ongoing,partitions=[t-0,t-1],txnLastUpdateTimestamp=99,txnTimeoutMs=60000"
	if r.String() != want {
		t.Errorf("String:\n got %s\nwant %s", r.String(), want)
	}
	j, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(j), `"state":"Ongoing"`) || !strings.Contains(string(j), `"transactionalId":"app-1"`) {
		t.Errorf("json %s %v", j, err)
	}
	tomb, err := DecodeTxnRecord(k, nil)
	if err != nil || !tomb.Tombstone || !strings.HasSuffix(tomb.String(), "<DELETE>") {
		t.Errorf("tombstone: %v %v", tomb, err)
	}
	if kk, vv, err := tomb.Encode(); err != nil || !bytes.Equal(kk, k) || vv != nil {
		t.Error("tombstone encode")
	}
	unk, err := DecodeTxnRecord([]byte{0, 5, 1, 2}, []byte{9})
	if err != nil || !unk.Unknown || unk.String() != "unknown::version=5" {
		t.Errorf("unknown key version: %v %v", unk, err)
	}
	for s := TxnEmpty; s <= TxnPrepareEpochFence; s++ {
		if !s.Valid() || strings.HasPrefix(s.String(), "Unknown") {
			t.Errorf("status %d", s)
		}
	}
	if TxnStatus(8).Valid() || TxnStatus(8).String() != "Unknown(8)" {
		t.Error("status 8")
	}
	bad := append([]byte(nil), vb...)
	bad[2+8+2+4] = 8 // the status byte
	if _, err := DecodeTxnRecord(k, bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("status 8: %v", err)
	}
}

func TestOffsetsRecordForms(t *testing.T) {
	k, _ := OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}.Encode()
	v, _ := OffsetCommitValue{Version: 3, Offset: 42, LeaderEpoch: 5, Metadata: "", CommitTimestamp: 1000, ExpireTimestamp: -1}.Encode()
	r, err := DecodeOffsetsRecord(k, v)
	if err != nil {
		t.Fatal(err)
	}
	want := `key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: {"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1000}}`
	if r.String() != want {
		t.Errorf("String:\n got %s\nwant %s", r.String(), want)
	}
	if r.Kind() != "offset_commit" {
		t.Errorf("kind %s", r.Kind())
	}
	tomb, _ := DecodeOffsetsRecord(k, nil)
	if !strings.HasSuffix(tomb.String(), "payload: <DELETE>") {
		t.Errorf("tombstone %s", tomb)
	}
	j, _ := json.Marshal(tomb)
	if !strings.Contains(string(j), `"value":null`) {
		t.Errorf("tombstone json %s", j)
	}
	for typ := int16(3); typ <= 15; typ++ {
		key := []byte{0, byte(typ), 0xde, 0xad}
		r, err := DecodeOffsetsRecord(key, []byte{1, 2, 3})
		if err != nil || !r.Unknown || r.String() != "unknown type "+itoa(int(typ)) || r.Kind() == "unknown" {
			t.Errorf("type %d: %v %v", typ, r, err)
		}
		kk, vv, err := r.Encode()
		if err != nil || !bytes.Equal(kk, key) || !bytes.Equal(vv, []byte{1, 2, 3}) {
			t.Errorf("type %d re-encoding", typ)
		}
	}
	for _, typ := range []int16{-1, 16, 300} {
		key := []byte{byte(uint16(typ) >> 8), byte(typ)}
		if r, err := DecodeOffsetsRecord(key, nil); err != nil || !r.Unknown || r.Kind() != "unknown" {
			t.Errorf("type %d: %v %v", typ, r, err)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestHostileCoordinatorRecords(t *testing.T) {
	k, _ := OffsetCommitKey{Version: 1, Group: "group", Topic: "topic", Partition: 3}.Encode()
	v, _ := OffsetCommitValue{Version: 3, Offset: 42, LeaderEpoch: 5, Metadata: "m", CommitTimestamp: 1000}.Encode()
	gk, _ := GroupMetadataKey{Group: "group"}.Encode()
	gv, _ := GroupMetadataValue{Version: 4, ProtocolType: "consumer", Members: []MemberMetadata{{MemberID: "m", Subscription: []byte{1}, Assignment: []byte{2}}}}.Encode()
	tk, _ := TransactionLogKey{TransactionalID: "tx"}.Encode()
	tvv := NewTransactionLogValue(1)
	tvv.TransactionPartitions = []TxnPartitions{{Topic: "t", PartitionIDs: []int32{1}}}
	tv, _ := tvv.Encode()

	check := func(name string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: decoded", name)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("%s: %v wraps no sentinel", name, err)
		}
	}
	// Every truncation of every valid record is an error.
	for cut := 0; cut < len(k); cut++ {
		_, err := DecodeOffsetsRecord(k[:cut], v)
		check("offset key cut", err)
	}
	for cut := 0; cut < len(v); cut++ {
		_, err := DecodeOffsetsRecord(k, v[:cut])
		check("offset value cut", err)
	}
	for cut := 2; cut < len(gk); cut++ {
		_, err := DecodeOffsetsRecord(gk[:cut], gv)
		check("group key cut", err)
	}
	for cut := 0; cut < len(gv); cut++ {
		_, err := DecodeOffsetsRecord(gk, gv[:cut])
		check("group value cut", err)
	}
	for cut := 0; cut < len(tk); cut++ {
		_, err := DecodeTxnRecord(tk[:cut], tv)
		check("txn key cut", err)
	}
	for cut := 0; cut < len(tv); cut++ {
		_, err := DecodeTxnRecord(tk, tv[:cut])
		check("txn value cut", err)
	}
	// Trailing bytes, unknown value versions, negative lengths, nulls
	// where the schema forbids them, huge counts.
	_, err := DecodeOffsetsRecord(append(append([]byte(nil), k...), 0), v)
	check("offset key trailing byte", err)
	_, err = DecodeOffsetsRecord(k, append(append([]byte(nil), v...), 0))
	check("offset value trailing byte", err)
	_, err = DecodeOffsetsRecord(k, []byte{0, 5, 0, 0, 0, 0, 0, 0, 0, 0})
	check("offset value v5", err)
	_, err = DecodeOffsetsRecord(k, []byte{0xff, 0xff})
	check("offset value v-1", err)
	_, err = DecodeOffsetsRecord([]byte{0, 1, 0xff, 0xfe}, v)
	check("negative group length", err)
	_, err = DecodeOffsetsRecord([]byte{0, 1, 0xff, 0xff, 0, 0, 0, 0, 0, 0}, v)
	check("null group", err)
	_, err = DecodeOffsetsRecord([]byte{0, 1, 0x7f, 0xff}, v)
	check("group longer than the key", err)
	_, err = DecodeOffsetsRecord(gk, []byte{0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	check("2^31 members", err)
	_, err = DecodeOffsetsRecord(gk, []byte{0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	check("null members", err)
	_, err = DecodeOffsetsRecord(gk, []byte{0, 4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	check("6-byte uvarint", err)
	v4, _ := OffsetCommitValue{Version: 4}.Encode()
	if _, err := DecodeOffsetsRecord(k, append(v4[:len(v4)-1:len(v4)-1], 2, 1, 0, 5, 0)); err != nil {
		t.Errorf("tags 1, 5: %v", err)
	}
	_, err = DecodeOffsetsRecord(k, append(v4[:len(v4)-1:len(v4)-1], 2, 5, 0, 1, 0))
	check("tags 5, 1", err)
	_, err = DecodeOffsetsRecord(k, append(v4[:len(v4)-1:len(v4)-1], 2, 5, 0, 5, 0))
	check("tag 5 twice", err)
	_, err = DecodeOffsetsRecord(k, append(v4[:len(v4)-1:len(v4)-1], 1, 5, 9, 0))
	check("tag longer than the value", err)
	_, err = DecodeTxnRecord(tk, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0, 0, 0})
	check("2^31 txn partitions", err)
	_, err = DecodeTxnRecord(tk, []byte{0, 2})
	check("txn value v2", err)
	_, err = DecodeTxnRecord([]byte{0}, nil)
	check("one-byte txn key", err)
	_, err = DecodeOffsetsRecord(nil, nil)
	check("empty offsets key", err)
	// A known tag with the wrong size.
	bad := NewTransactionLogValue(1)
	bad.UnknownTags = nil
	bb, _ := bad.Encode()
	bb = append(bb[:len(bb)-1], 1, 0, 2, 0, 0) // tag 0 with 2 bytes instead of 8
	_, err = DecodeTxnRecord(tk, bb)
	check("tag 0 of 2 bytes", err)
	// Encoding refuses what cannot be written.
	if _, err := (OffsetCommitKey{Version: 1, Group: strings.Repeat("g", 40000)}).Encode(); err == nil {
		t.Error("40000-byte group encoded")
	}
	if _, err := (OffsetCommitValue{Version: 9}).Encode(); !errors.Is(err, ErrUnsupportedVersion) {
		t.Error("value v9 encoded")
	}
	if _, err := (TransactionLogValue{Version: 1, UnknownTags: []TaggedField{{Tag: 2}, {Tag: 2}}}).Encode(); err == nil {
		t.Error("duplicate tag encoded")
	}
}
