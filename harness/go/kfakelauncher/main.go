// Command kfakelauncher runs franz-go's kfake (an in-memory, Kafka-compatible cluster) as one process
// for kafka-share-harness's kfake backend (harness/cluster/kfake.py).
//
//	kfakelauncher --ports 41001,41002,41003 [--config KEY=VALUE]... [--cluster-id ID]
//
// It starts one broker per port on 127.0.0.1, with share groups on (kfake always serves them), then
// prints one JSON line {"event":"ready","addrs":[...],"kfake":"<module version>"} on stdout. After that
// it reads commands from stdin, one per line, and answers each with one JSON line:
//
//	leader TOPIC PARTITION             {"leader": N}  (-1: no such partition)
//	move TOPIC PARTITION NODE          {"ok": true} or {"error": "..."}
//	rehash-coordinators                {"ok": true}: group coordinators move (clients must find them again)
//	coordinator KEY                    {"coordinator": N}
//
// End of stdin (the harness closed it, or died) or SIGTERM/SIGINT closes the cluster and exits 0:
// the launcher never outlives the process that started it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

type configs map[string]string

func (c configs) String() string { return fmt.Sprint(map[string]string(c)) }

func (c configs) Set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	c[key] = value
	return nil
}

func kfakeVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go/pkg/kfake" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func emit(v any) {
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kfakelauncher: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	brokerConfigs := configs{}
	portList := flag.String("ports", "", "one loopback port per broker, comma separated")
	clusterID := flag.String("cluster-id", "", "the cluster id kfake reports")
	flag.Var(brokerConfigs, "config", "a broker config KEY=VALUE (repeatable)")
	flag.Parse()

	var ports []int
	for _, p := range strings.Split(*portList, ",") {
		port, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || port < 1 || port > 65535 {
			fail("invalid --ports %q: give one port 1..65535 per broker, comma separated", *portList)
		}
		ports = append(ports, port)
	}
	opts := []kfake.Opt{kfake.NumBrokers(len(ports)), kfake.Ports(ports...), kfake.BrokerConfigs(brokerConfigs)}
	if *clusterID != "" {
		opts = append(opts, kfake.ClusterID(*clusterID))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fail("starting kfake: %v", err)
	}
	defer cluster.Close()

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		commands(cluster)
		close(done)
	}()
	emit(map[string]any{"event": "ready", "addrs": cluster.ListenAddrs(), "kfake": kfakeVersion()})
	select {
	case <-signals:
	case <-done:
	}
}

// commands answers the harness's commands until stdin ends.
func commands(cluster *kfake.Cluster) {
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		words := strings.Fields(lines.Text())
		if len(words) == 0 {
			continue
		}
		emit(answer(cluster, words))
	}
}

func answer(cluster *kfake.Cluster, words []string) map[string]any {
	number := func(s string) (int32, error) {
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	}
	switch {
	case words[0] == "leader" && len(words) == 3:
		partition, err := number(words[2])
		if err != nil {
			return map[string]any{"error": "partition: " + err.Error()}
		}
		return map[string]any{"leader": cluster.LeaderFor(words[1], partition)}
	case words[0] == "move" && len(words) == 4:
		partition, err1 := number(words[2])
		node, err2 := number(words[3])
		if err1 != nil || err2 != nil {
			return map[string]any{"error": "partition and node must be numbers"}
		}
		if err := cluster.MoveTopicPartition(words[1], partition, node); err != nil {
			return map[string]any{"error": err.Error()}
		}
		return map[string]any{"ok": true}
	case words[0] == "rehash-coordinators" && len(words) == 1:
		cluster.RehashCoordinators()
		return map[string]any{"ok": true}
	case words[0] == "coordinator" && len(words) == 2:
		return map[string]any{"coordinator": cluster.CoordinatorFor(words[1])}
	}
	return map[string]any{"error": fmt.Sprintf("unknown command %q", strings.Join(words, " "))}
}
