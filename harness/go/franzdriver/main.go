// Command franzdriver is the franz-go share-consumer driver of the harness (docs/driver.md,
// contract 4), step behaviour only: it runs one JSON command per stdin line and prints JSON
// operations on stdout, like harness/java/ShareDriver.java does for KafkaShareConsumer.
//
//	franzdriver '<json config>'
//
// franz-go's share consumer (kgo.ShareGroup, v1.21+) differs from KafkaShareConsumer in ways the
// driver reports as they happen rather than hides:
//
//   - There is no acknowledgement mode. A record the application did not acknowledge with a
//     terminal type (or only renewed) when it polls again is accepted by that poll; the driver
//     prints those ACCEPTs when the poll starts, in explicit mode too (where KafkaShareConsumer
//     refuses the poll). A renewed record is not handed back by the next poll: that poll accepts
//     it. In implicit mode a commit accepts the last batch first (Client.MarkAcks(AckAccept)
//     without records: those still unacknowledged), then flushes; an explicit acknowledgement is
//     taken in implicit mode too (nothing refuses it).
//   - Record.Ack hands the acknowledgement to the client, which sends it within about a second in
//     the background (or with the next ShareFetch); there is no commit as such. commit_sync is
//     Client.FlushAcks (send now, wait for every result; its results are those of everything
//     handed over since the last commit), commit_async starts that flush without waiting.
//   - Record.Ack returns nothing: an acknowledgement franz-go does not take (the record already
//     has a terminal acknowledgement, or a RENEW of it is still in flight) is dropped silently.
//     The driver reads the record's acknowledgement state before acknowledging and prints such
//     an acknowledgement as `fail` (nothing was sent).
//   - The ShareAckCallback reports per partition, without offsets. The driver names the offsets:
//     those it handed to the client on that partition whose result had not come yet. Before it
//     hands the client new acknowledgements while results are outstanding it flushes first
//     (Client.FlushAcks), so that one result never covers two hand-overs.
//   - Close releases (RELEASE) what the last poll gave and was not acknowledged, like
//     KafkaShareConsumer; as in ShareDriver.java nothing is printed for it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// version is the franz-go module version; `-ldflags "-X main.version=..."` sets it, else the
// build information of the binary names it.
var version = ""

// docs/driver.md; not implemented here (the features are not declared): contract 2's `unsubscribe`, contract 3's
// `subscribe` and `subscription` (franz-go fixes the topics at NewClient), an `ack` without a type (Record.Ack takes
// one), `"by": "offset"` (franz-go acknowledges a record it returned, by the record) and the `default` mode (franz-go
// has no modes); contract 4's refused start (franz-go takes any option kgo.NewClient accepts), `client_instance_id`
// and `wakeup_after` (franz-go has neither call)
const contract = 4

// features are what this driver supports, in the vocabulary of docs/driver.md.
var features = []string{"ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "ack:RENEW", "explicit", "implicit",
	"commit_sync", "commit_async", "callback", "acquire_mode", "rack_id", "implicit_batch_held", "subscribe_none"}

// Acknowledgement states of a record, as franz-go keeps them (kgo.AckStatus; 0: none yet).
const (
	stNone    int32 = 0
	stAccept        = int32(kgo.AckAccept)
	stRelease       = int32(kgo.AckRelease)
	stReject        = int32(kgo.AckReject)
	stRenew         = int32(kgo.AckRenew)
)

var ackTypes = map[string]kgo.AckStatus{"ACCEPT": kgo.AckAccept, "RELEASE": kgo.AckRelease,
	"REJECT": kgo.AckReject, "RENEW": kgo.AckRenew}

var statusNames = map[int32]string{stAccept: "ACCEPT", stRelease: "RELEASE", stReject: "REJECT", stRenew: "RENEW"}

func terminal(s int32) bool { return s == stAccept || s == stRelease || s == stReject }

// ---- output ----------------------------------------------------------------------------------

var outMu sync.Mutex

type obj = map[string]any

func emit(typ, f string, value any) {
	line, err := json.Marshal(struct {
		Type  string `json:"type"`
		F     string `json:"f"`
		Value any    `json:"value"`
	}{typ, f, value})
	if err != nil {
		line = []byte(fmt.Sprintf(`{"type":"info","f":"error","value":{"code":null,"message":%q}}`,
			"franzdriver: cannot encode an operation: "+err.Error()))
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

// errText is an error as the history shows it: a Kafka error as "NAME: description".
func errText(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

// errCode is the Kafka error code an error carries, or nil.
func errCode(err error) any {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return int(ke.Code)
	}
	return nil
}

func clientVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "unknown"
}

// ---- a record's acknowledgement state --------------------------------------------------------

// clientStatus reads the acknowledgement state franz-go keeps for a share record (the status of
// its shareAckState, which Record.Ack sets by compare-and-swap and which has no accessor), so the
// driver can tell an acknowledgement the client takes from one it drops. It walks the record's
// context (context.WithValue(parent, shareAckKey, *shareAckSlab)) by reflection; ok is false when
// the layout is not the one of the franz-go this was written against (v1.22.2), and the driver
// then falls back on its own account.
func clientStatus(r *kgo.Record) (status int32, ok bool) {
	defer func() {
		if recover() != nil {
			status, ok = 0, false
		}
	}()
	ctx := any(r.Context)
	for depth := 0; ctx != nil && depth < 8; depth++ {
		v := reflect.ValueOf(ctx)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return 0, false
		}
		e := v.Elem()
		if e.Type().String() == "context.valueCtx" {
			key, val := e.FieldByName("key"), e.FieldByName("val")
			if key.IsValid() && key.Kind() == reflect.Interface && !key.IsNil() && key.Elem().Kind() == reflect.Pointer &&
				key.Elem().Elem().Kind() == reflect.String && key.Elem().Elem().String() == "share-ack" &&
				val.IsValid() && !val.IsNil() && val.Elem().Type().String() == "*kgo.shareAckSlab" {
				return slabStatus(r, val.Elem().Elem())
			}
		}
		parent := e.FieldByName("Context")
		if !parent.IsValid() || parent.Kind() != reflect.Interface || parent.IsNil() || !parent.CanInterface() {
			return 0, false
		}
		ctx = parent.Interface()
	}
	return 0, false
}

func slabStatus(r *kgo.Record, slab reflect.Value) (int32, bool) {
	states, first := slab.FieldByName("states"), slab.FieldByName("records0")
	if !states.IsValid() || states.Kind() != reflect.Slice || !first.IsValid() || first.Kind() != reflect.Pointer {
		return 0, false
	}
	offset := uintptr(unsafe.Pointer(r)) - first.Pointer()
	size := unsafe.Sizeof(kgo.Record{})
	if first.Pointer() == 0 || uintptr(unsafe.Pointer(r)) < first.Pointer() || offset%size != 0 {
		return 0, false
	}
	idx := int(offset / size)
	if idx >= states.Len() {
		return 0, false
	}
	st := states.Index(idx)
	field := st.FieldByName("status")
	if !field.IsValid() || field.Type() != reflect.TypeOf(atomic.Int32{}) || !field.CanAddr() {
		return 0, false
	}
	if off := st.FieldByName("offset"); !off.IsValid() || off.Kind() != reflect.Int64 || off.Int() != r.Offset {
		return 0, false
	}
	return (*atomic.Int32)(unsafe.Pointer(field.UnsafeAddr())).Load(), true
}

// ---- the driver ------------------------------------------------------------------------------

type tp struct {
	topic     string
	partition int32
}

type rkey struct {
	tp
	offset int64
}

func keyOf(r *kgo.Record) rkey { return rkey{tp{r.Topic, r.Partition}, r.Offset} }

type driver struct {
	cl       *kgo.Client
	explicit bool
	maxPoll  int

	given   map[rkey]*kgo.Record // every record a poll returned (the latest delivery of each offset)
	last    []*kgo.Record        // the last batch: what the next poll accepts if not acknowledged
	tracked map[rkey]int32       // the driver's own account of each record's state (fallback)

	mu         sync.Mutex     // guards what follows; the ack callback takes it
	unresolved map[tp][]int64 // acknowledgements handed to the client whose result has not come
	results    map[tp]error   // the results that came since the last commit, by partition
	order      []tp           // ... in the order they came
}

func (d *driver) status(r *kgo.Record) int32 {
	if s, ok := clientStatus(r); ok {
		return s
	}
	return d.tracked[keyOf(r)]
}

// handed records acknowledgements given to the client (d.mu held).
func (d *driver) handed(recs []*kgo.Record, status int32) {
	for _, r := range recs {
		k := keyOf(r)
		d.unresolved[k.tp] = append(d.unresolved[k.tp], k.offset)
		d.tracked[k] = status
	}
}

// onResults is the ShareAckCallback: it prints the results with the offsets they cover, and keeps
// them for the next commit_sync's results. A result covering none of the acknowledgements the
// driver handed over (gap acknowledgements the client makes itself, close's releases) is printed
// only if it is an error.
func (d *driver) onResults(_ *kgo.Client, results kgo.ShareAckResults) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var texts []string
	byErr := map[string][]obj{}
	errOf := map[string]error{}
	for _, res := range results {
		t := tp{res.Topic, res.Partition}
		offsets := dedupe(d.unresolved[t])
		delete(d.unresolved, t)
		if len(offsets) == 0 && res.Err == nil {
			continue
		}
		text := ""
		if res.Err != nil {
			text = res.Err.Error()
		}
		if _, seen := byErr[text]; !seen {
			texts = append(texts, text)
			errOf[text] = res.Err
		}
		byErr[text] = append(byErr[text], obj{"topic": res.Topic, "partition": res.Partition, "offsets": offsets})
		if _, seen := d.results[t]; !seen {
			d.order = append(d.order, t)
		}
		d.results[t] = res.Err // the latest result of the partition
	}
	for _, text := range texts {
		emit("ok", "callback", obj{"partitions": byErr[text], "error": errText(errOf[text])})
	}
}

func dedupe(offsets []int64) []int64 {
	out := make([]int64, 0, len(offsets))
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	for i, o := range offsets {
		if i == 0 || o != offsets[i-1] {
			out = append(out, o)
		}
	}
	return out
}

// barrier waits for the results of acknowledgements already handed to the client (it flushes
// them now rather than within the second), so that new ones never share a result with them.
func (d *driver) barrier() {
	d.mu.Lock()
	pending := len(d.unresolved) > 0
	d.mu.Unlock()
	if !pending {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if d.cl.FlushAcks(ctx) == nil {
		d.mu.Lock()
		clear(d.unresolved) // the client had nothing left in flight: no result will come for these
		d.mu.Unlock()
	}
}

func ackRecords(recs []*kgo.Record, types []string) obj {
	out := make([]obj, 0, len(recs))
	for i, r := range recs {
		out = append(out, obj{"topic": r.Topic, "partition": r.Partition, "offset": r.Offset, "type": types[i]})
	}
	return obj{"records": out}
}

func same(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// acceptLast prints (and hands over) the ACCEPTs the next poll makes: every record of the last
// batch not acknowledged with a terminal type, renewed ones included.
func (d *driver) acceptLast() {
	if len(d.last) == 0 {
		return
	}
	d.barrier()
	d.mu.Lock()
	defer d.mu.Unlock()
	var accepted []*kgo.Record
	for _, r := range d.last {
		if s := d.status(r); s == stNone || s == stRenew {
			accepted = append(accepted, r)
		}
	}
	if len(accepted) > 0 {
		d.handed(accepted, stAccept)
		emit("ok", "acknowledge", ackRecords(accepted, same(len(accepted), "ACCEPT")))
	}
}

// acceptForCommit is implicit mode's acceptance when a commit starts: MarkAcks(AckAccept) without
// records accepts the last batch's records that have no acknowledgement yet.
func (d *driver) acceptForCommit() {
	if d.explicit || len(d.last) == 0 {
		return
	}
	d.barrier()
	d.mu.Lock()
	defer d.mu.Unlock()
	before := make([]int32, len(d.last))
	for i, r := range d.last {
		before[i] = d.status(r)
	}
	d.cl.MarkAcks(kgo.AckAccept)
	var accepted []*kgo.Record
	for i, r := range d.last {
		if after, ok := clientStatus(r); ok {
			if after == stAccept && before[i] != stAccept {
				accepted = append(accepted, r)
			}
		} else if before[i] == stNone {
			accepted = append(accepted, r)
		}
	}
	if len(accepted) > 0 {
		d.handed(accepted, stAccept)
		emit("ok", "acknowledge", ackRecords(accepted, same(len(accepted), "ACCEPT")))
	}
}

// poll polls until one batch with records arrives or the timeout passes; how many it returned.
func (d *driver) poll(timeout float64) int {
	d.acceptLast()
	deadline := time.Now().Add(time.Duration(timeout * float64(time.Second)))
	for first := true; ; first = false {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fetches := d.cl.PollRecords(ctx, d.maxPoll)
		cancel()
		if first {
			d.last = nil // this poll accepted them
		}
		errored := false
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			errored = true
			message := fe.Err.Error()
			if fe.Topic != "" {
				message = fmt.Sprintf("%s-%d: %s", fe.Topic, fe.Partition, message)
			}
			emit("info", "error", obj{"code": errCode(fe.Err), "message": message})
		}
		recs := fetches.Records()
		if len(recs) > 0 {
			out := make([]obj, 0, len(recs))
			for _, r := range recs {
				var count any
				if c := r.DeliveryCount(); c > 0 {
					count = int(c)
				}
				out = append(out, obj{"id": string(r.Value), "topic": r.Topic, "partition": r.Partition,
					"offset": r.Offset, "delivery_count": count})
				k := keyOf(r)
				d.given[k] = r
				delete(d.tracked, k)
			}
			emit("ok", "poll", obj{"records": out})
			d.last = recs
			return len(recs)
		}
		if !time.Now().Before(deadline) {
			return 0
		}
		if errored {
			time.Sleep(min(100*time.Millisecond, time.Until(deadline)))
		}
	}
}

// acknowledge acknowledges records a poll returned; the error of the last one franz-go would not
// take (printed as a failed acknowledgement: nothing was sent), else nil.
func (d *driver) acknowledge(records []ackCmd) any {
	if len(records) > 0 {
		d.barrier()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var lastErr any
	var done []*kgo.Record
	var types []string
	for _, a := range records {
		k := rkey{tp{a.Topic, a.Partition}, a.Offset}
		rec := d.given[k]
		status, known := ackTypes[a.Type]
		var problem string
		switch {
		case rec == nil:
			problem = "the record was never returned by a poll"
		case !known:
			problem = fmt.Sprintf("unknown acknowledge type %q", a.Type)
		default:
			s := d.status(rec)
			switch {
			case terminal(s):
				problem = fmt.Sprintf("the record is already acknowledged (%s): franz-go ignores another "+
					"acknowledgement", statusNames[s])
			case status == kgo.AckRenew && s == stRenew:
				problem = "a RENEW of the record is still in flight: franz-go ignores another until the broker answers"
			}
		}
		if problem != "" {
			lastErr = problem
			emit("fail", "acknowledge", obj{"records": []obj{{"topic": a.Topic, "partition": a.Partition,
				"offset": a.Offset, "type": a.Type}}, "error": problem})
			continue
		}
		rec.Ack(status)
		d.handed([]*kgo.Record{rec}, int32(status))
		done = append(done, rec)
		types = append(types, a.Type)
	}
	if len(done) > 0 {
		emit("ok", "acknowledge", ackRecords(done, types))
	}
	return lastErr
}

// commitSync is FlushAcks: it sends every acknowledgement the client holds now and waits for all
// results. Its results are those of every acknowledgement handed over since the last commit (the
// client may have sent some in the background before), per partition.
func (d *driver) commitSync() {
	d.acceptForCommit()
	emit("invoke", "commit", obj{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := d.cl.FlushAcks(ctx)
	cancel()
	d.mu.Lock()
	results, order := d.results, d.order
	d.results, d.order = map[tp]error{}, nil
	d.mu.Unlock()
	if err != nil {
		emit("info", "commit", obj{"error": "commit (FlushAcks): " + err.Error()})
		return
	}
	out := make([]obj, 0, len(order))
	for _, t := range order {
		out = append(out, obj{"topic": t.topic, "partition": t.partition, "error": errText(results[t])})
	}
	emit("ok", "commit", obj{"results": out})
}

// commitAsync starts FlushAcks without waiting: the results come through the callback.
func (d *driver) commitAsync() {
	d.acceptForCommit()
	emit("invoke", "commit", obj{"async": true})
	d.mu.Lock()
	d.results, d.order = map[tp]error{}, nil
	d.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.cl.FlushAcks(ctx) // signals every broker to send its acknowledgements now; does not wait
}

func (d *driver) close() {
	emit("invoke", "close", obj{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := d.cl.LeaveGroupContext(ctx)
	if err == nil {
		// the results of the acknowledgements the leave sent come through the callback
		wait, stop := context.WithTimeout(ctx, 5*time.Second)
		d.cl.FlushAcks(wait)
		stop()
	}
	d.cl.Close()
	if err != nil {
		emit("info", "close", obj{"error": "close (LeaveGroup): " + err.Error()})
		return
	}
	emit("ok", "close", obj{})
}

// ---- configuration ---------------------------------------------------------------------------

type config struct {
	Bootstrap    string         `json:"bootstrap"`
	Group        string         `json:"group"`
	Topics       []string       `json:"topics"`
	Behaviour    string         `json:"behaviour"`
	Mode         string         `json:"mode"`
	ClientConfig map[string]any `json:"client_config"`
}

type ackCmd struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Type      string `json:"type"`
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

var jaasField = regexp.MustCompile(`(\w+)\s*=\s*"([^"]*)"`)

// options are the client options of the Kafka-style properties franz-go has an equivalent of;
// the names of the others, which the driver ignores.
func options(props map[string]any) (opts []kgo.Opt, maxPoll int, ignored []string, err error) {
	maxPoll = 500 // max.poll.records' default in KafkaShareConsumer
	var user, password, mechanism, protocol string
	ms := func(name, v string) (time.Duration, error) {
		n, e := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if e != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: expected milliseconds", name, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	num := func(name, v string) (int32, error) {
		n, e := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if e != nil || n <= 0 {
			return 0, fmt.Errorf("%s=%q: expected a positive number", name, v)
		}
		return int32(n), nil
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := stringOf(props[name])
		switch name {
		case "max.poll.records":
			n, e := num(name, v)
			if e != nil {
				return nil, 0, nil, e
			}
			maxPoll = int(n)
			opts = append(opts, kgo.ShareMaxRecords(n))
		case "share.acquire.mode":
			switch v {
			case "record_limit":
				opts = append(opts, kgo.ShareMaxRecordsStrict())
			case "batch_optimized":
			default:
				return nil, 0, nil, fmt.Errorf("%s=%q: expected batch_optimized or record_limit", name, v)
			}
		case "max.concurrent.fetches":
			// franz-go's MaxConcurrentFetches: -1 (its default) unbounded background fetches; 0 a
			// fetch only while the application polls (no buffering); n > 0 at most n in flight or buffered
			n, e := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if e != nil || n < -1 {
				return nil, 0, nil, fmt.Errorf("%s=%q: expected -1, 0 or a positive number", name, v)
			}
			opts = append(opts, kgo.MaxConcurrentFetches(int(n)))
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "client.rack":
			opts = append(opts, kgo.Rack(v)) // sent as the member's RackID (KIP-1227)
		case "fetch.max.wait.ms":
			d, e := ms(name, v)
			if e != nil {
				return nil, 0, nil, e
			}
			opts = append(opts, kgo.FetchMaxWait(d))
		case "fetch.min.bytes", "fetch.max.bytes", "max.partition.fetch.bytes":
			n, e := num(name, v)
			if e != nil {
				return nil, 0, nil, e
			}
			opts = append(opts, map[string]func(int32) kgo.Opt{
				"fetch.min.bytes":           func(n int32) kgo.Opt { return kgo.FetchMinBytes(n) },
				"fetch.max.bytes":           func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) },
				"max.partition.fetch.bytes": func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) },
			}[name](n))
		case "metadata.max.age.ms", "topic.metadata.refresh.interval.ms":
			d, e := ms(name, v)
			if e != nil {
				return nil, 0, nil, e
			}
			opts = append(opts, kgo.MetadataMaxAge(d), kgo.MetadataMinAge(min(d, 5*time.Second)))
		case "security.protocol":
			protocol = strings.ToUpper(v)
		case "sasl.mechanism", "sasl.mechanisms":
			mechanism = strings.ToUpper(v)
		case "sasl.username":
			user = v
		case "sasl.password":
			password = v
		case "sasl.jaas.config":
			for _, m := range jaasField.FindAllStringSubmatch(v, -1) {
				switch m[1] {
				case "username":
					user = m[2]
				case "password":
					password = m[2]
				}
			}
		default:
			ignored = append(ignored, name)
		}
	}
	switch protocol {
	case "", "PLAINTEXT":
	case "SASL_PLAINTEXT":
		if mechanism != "" && mechanism != "PLAIN" {
			return nil, 0, nil, fmt.Errorf("sasl.mechanism=%s: the driver speaks PLAIN only", mechanism)
		}
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()))
	default:
		return nil, 0, nil, fmt.Errorf("security.protocol=%s: the driver speaks PLAINTEXT and SASL_PLAINTEXT only", protocol)
	}
	return opts, maxPoll, ignored, nil
}

// ---- main ------------------------------------------------------------------------------------

func fatal(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franzdriver: "+format+"\n", args...)
	os.Exit(code)
}

func main() {
	if len(os.Args) != 2 {
		fatal(2, "usage: franzdriver '<json config>' (docs/driver.md)")
	}
	var cfg config
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		fatal(2, "the config is not a JSON object: %v", err)
	}
	if cfg.Behaviour != "step" {
		fatal(2, "unknown behaviour %q: this driver runs step only", cfg.Behaviour)
	}
	explicit := cfg.Mode != "implicit"
	extra, maxPoll, ignored, err := options(cfg.ClientConfig)
	if err != nil {
		fatal(1, "%v", err)
	}
	d := &driver{explicit: explicit, maxPoll: maxPoll, given: map[rkey]*kgo.Record{},
		tracked: map[rkey]int32{}, unresolved: map[tp][]int64{}, results: map[tp]error{}}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(cfg.Bootstrap, ",")...),
		kgo.ShareGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.ShareAckCallback(d.onResults),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fatal(1, "cannot create the client: %v", err)
	}
	d.cl = cl
	mode := "implicit"
	if explicit {
		mode = "explicit"
	}
	if ignored == nil {
		ignored = []string{}
	}
	emit("ok", "start", obj{"client": "franz-go", "client_version": clientVersion(), "behaviour": "step",
		"mode": mode, "contract": contract, "features": features, "ignored_config": ignored,
		"callback_offsets": "driver"}) // ShareAckCallback names no offsets: the driver attributes them

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 64*1024*1024)
	n := 0
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		n++
		var command struct {
			Cmd     *string  `json:"cmd"`
			Timeout *float64 `json:"timeout"`
			Records []ackCmd `json:"records"`
		}
		if err := json.Unmarshal([]byte(line), &command); err != nil || command.Cmd == nil {
			if len(line) > 200 {
				line = line[:200]
			}
			emit("info", "error", obj{"code": nil, "message": "bad command: " + line})
			emit("ok", "step", obj{"n": n, "cmd": nil})
			continue
		}
		cmd := *command.Cmd
		if cmd == "close" {
			break
		}
		reply := obj{"n": n, "cmd": cmd}
		func() {
			defer func() {
				if p := recover(); p != nil {
					reply["error"] = fmt.Sprintf("panic: %v", p)
					emit("info", "error", obj{"code": nil, "message": fmt.Sprintf("%s: panic: %v", cmd, p)})
				}
			}()
			switch cmd {
			case "poll":
				timeout := 5.0
				if command.Timeout != nil {
					timeout = *command.Timeout
				}
				reply["records"] = d.poll(timeout)
			case "ack":
				reply["error"] = d.acknowledge(command.Records)
			case "commit_sync":
				d.commitSync()
			case "commit_async":
				d.commitAsync()
			default:
				reply["error"] = "unknown command " + cmd
			}
		}()
		emit("ok", "step", reply)
	}
	d.close()
	emit("ok", "step", obj{"n": n, "cmd": "close"})
}
