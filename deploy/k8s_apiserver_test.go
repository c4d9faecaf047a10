package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/plload/plload/workload"
)

// The API-server check: a real kube-apiserver (with etcd) on loopback validates what WriteK8s
// prints, with `kubectl apply --dry-run=server`: the server's own validation, defaulting and
// admission, which the field checks in k8s_test.go only approximate. .ci/kube-apiserver.sh builds
// the binaries; without them the test skips, saying why.
const (
	// kubeEnv: "require" fails the test when the binaries are missing (CI, after
	// .ci/kube-apiserver.sh), "off" skips it (the race run: the servers are not Go code under test).
	kubeEnv = "PLLOAD_KUBE"
	// kubeBinEnv names the folder holding kube-apiserver and kubectl.
	kubeBinEnv = "PLLOAD_KUBE_BIN"
	// kubeDeadline bounds the whole test: the servers' start and every kubectl call.
	kubeDeadline = 4 * time.Minute
)

// kubeCluster is an etcd and a kube-apiserver of this test, reachable only on 127.0.0.1.
type kubeCluster struct {
	kubectlPath, home, kubeconfig string
}

// kubeBinaries finds kube-apiserver, kubectl and etcd, or skips (fails under PLLOAD_KUBE=require).
func kubeBinaries(t *testing.T) (apiserver, kubectl, etcd string) {
	t.Helper()
	switch {
	case os.Getenv(kubeEnv) == "off":
		t.Skipf("API-server check skipped: %s=off", kubeEnv)
	case testing.Short():
		t.Skip("API-server check skipped in -short mode")
	}
	miss := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + " (.ci/kube-apiserver.sh builds and installs them)"
		if os.Getenv(kubeEnv) == "require" {
			t.Fatalf("API-server check: %s", msg)
		}
		t.Skipf("API-server check skipped: %s", msg)
	}
	dir := os.Getenv(kubeBinEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			miss("no %s and no home directory: %v", kubeBinEnv, err)
		}
		dir = filepath.Join(home, ".cache", "plload", "k8s", "bin")
	}
	apiserver, kubectl = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "kubectl")
	for _, p := range []string{apiserver, kubectl} {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			miss("no executable %s (%s names the folder)", p, kubeBinEnv)
		}
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		miss("no etcd on PATH (Debian's etcd-server)")
	}
	return apiserver, kubectl, etcd
}

// loopbackPorts picks n distinct free ports on 127.0.0.1, holding each until all are picked.
func loopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// childEnv is the servers' and kubectl's environment: no proxy (everything is on loopback), no
// kubeconfig but ours, and a home of the test's, so kubectl caches nothing in the user's.
func childEnv(home, kubeconfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") || k == "KUBECONFIG" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "KUBECONFIG="+kubeconfig)
}

// startChild starts a server with its output in dir/name.log; it is killed at the test's end. The
// channel closes when it exits.
func startChild(t *testing.T, dir, name string, env []string, path string, args ...string) (<-chan struct{}, string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env, cmd.Dir = log, log, env, dir
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return exited, logPath
}

// logTail is the last lines of a server's log, for a failure message.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// writeServiceAccountKey writes an RSA key pair that signs and checks service-account tokens.
func writeServiceAccountKey(t *testing.T, dir string) (private, public string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	for p, block := range map[string]*pem.Block{
		private: {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)},
		public:  {Type: "PUBLIC KEY", Bytes: pub},
	} {
		if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return private, public
}

// startKubeCluster starts etcd and kube-apiserver (token auth, RBAC) on free loopback ports and
// waits, until ctx's deadline, for the server's /readyz.
func startKubeCluster(ctx context.Context, t *testing.T) *kubeCluster {
	t.Helper()
	apiserver, kubectl, etcd := kubeBinaries(t)
	dir := t.TempDir()
	ports := loopbackPorts(t, 3)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	serverURL := "https://127.0.0.1:" + strconv.Itoa(ports[2])

	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,plload-test,plload-test,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saKey, saPub := writeServiceAccountKey(t, dir)
	c := &kubeCluster{kubectlPath: kubectl, home: filepath.Join(dir, "home"), kubeconfig: filepath.Join(dir, "kubeconfig")}
	// The server's certificate is self-signed, made by the server itself in --cert-dir.
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: test, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`, serverURL, token)
	if err := os.WriteFile(c.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(c.home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := childEnv(c.home, c.kubeconfig)

	etcdExited, etcdLog := startChild(t, dir, "etcd", env, etcd,
		"--name", "plload-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "plload-test="+peerURL)
	apiExited, apiLog := startChild(t, dir, "kube-apiserver", env, apiserver,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", saPub,
		"--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		// No node, no kube-proxy: the server must not publish its own address as the kubernetes
		// Service's endpoints.
		"--endpoint-reconciler-type", "none")

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	start, last := time.Now(), "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, serverURL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err != nil {
			last = err.Error()
		} else {
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("kube-apiserver ready in %.1f s on %s", time.Since(start).Seconds(), serverURL)
				return c
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body.String())
		}
		select {
		case <-etcdExited:
			t.Fatalf("etcd exited before the API server was ready; its log:\n%s", logTail(etcdLog))
		case <-apiExited:
			t.Fatalf("kube-apiserver exited before it was ready; its log:\n%s", logTail(apiLog))
		case <-ctx.Done():
			t.Fatalf("kube-apiserver not ready after %.0f s (last /readyz: %s); its log:\n%s\netcd's:\n%s",
				time.Since(start).Seconds(), last, logTail(apiLog), logTail(etcdLog))
		case <-tick.C:
		}
	}
}

// kubectl runs kubectl against the test's server with stdin, until ctx's deadline.
func (c *kubeCluster) kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, c.kubectlPath, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Env = childEnv(c.home, c.kubeconfig)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// nsCommandRE finds the header's command that creates the namespace before a server-side dry run.
var nsCommandRE = regexp.MustCompile(`(?m)^# kubectl apply --dry-run=server needs it to exist first: (kubectl create namespace \S+ --dry-run=client -o yaml) \| (kubectl apply -f -)$`)

// createNamespace creates the namespace for real with the header's own command, so that a
// server-side dry run of the stream, which creates nothing, finds it.
func (c *kubeCluster) createNamespace(ctx context.Context, t *testing.T, stream []byte, ns string) {
	t.Helper()
	m := nsCommandRE.FindSubmatch(stream)
	if m == nil || !strings.Contains(string(m[1]), " "+ns+" ") {
		header, _, _ := strings.Cut(string(stream), "---\n")
		t.Fatalf("the header has no command creating the namespace %s for a dry run:\n%s", ns, header)
	}
	y, stderr, err := c.kubectl(ctx, nil, strings.Fields(string(m[1]))[1:]...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, stderr)
	}
	if _, stderr, err := c.kubectl(ctx, []byte(y), strings.Fields(string(m[2]))[1:]...); err != nil {
		t.Fatalf("%s (namespace %s): %v\n%s", m[2], ns, err, stderr)
	}
}

// dryRun has the server validate the stream; it returns kubectl's output and the server's refusal.
func (c *kubeCluster) dryRun(ctx context.Context, stream []byte) (stdout, stderr string, err error) {
	return c.kubectl(ctx, stream, "apply", "--dry-run=server", "-f", "-")
}

// apiPlan is testPlan's scenario under another name.
func apiPlan(t *testing.T, shards int, name string) *Plan {
	t.Helper()
	sc, issues := workload.Parse("t.yaml", []byte(scenarioHead+`session: {user_input_tokens: {min: 5, max: 10}, turns: 1, think_time: {min: 1s, max: 1s}, max_output_tokens: {min: 40, max: 40}}
load: {mode: concurrency, drain_timeout: 30s, stages: [{concurrency: 8, warmup: 10s, duration: 60s}, {concurrency: 4, duration: 120s}]}
`), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(sc, Options{Shards: shards, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeStream(t *testing.T, p *Plan, o K8sOptions) ([]byte, int) {
	t.Helper()
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteK8s(&b, p, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), len(Manifests(p, o))
}

// TestK8sManifestsPassAPIServer: a real kube-apiserver accepts every object of the generated stream,
// for each shape the flags give it, without a warning; and refuses, as the header says, a stream
// whose namespace does not exist yet (a dry run creates nothing), and the results-init container in
// a namespace enforcing Pod Security "restricted".
// Catches: a field the server refuses or drops (an unknown field, a name or label too long, a
// per-index limit on a Job that is not Indexed), which only a cluster would tell.
func TestK8sManifestsPassAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeDeadline)
	defer cancel()
	c := startKubeCluster(ctx, t)

	longName := "a" + strings.Repeat("b", maxNameLen-2) + "c"
	cases := []struct {
		name   string
		plan   *Plan
		o      func(*K8sOptions)
		apiKey bool
	}{
		{name: "namespace, claim and run id", plan: apiPlan(t, 2, "load"),
			o: func(o *K8sOptions) { o.Namespace = "bench-a" }},
		{name: "allow partial, results init, pull policy", plan: apiPlan(t, 2, "load"), o: func(o *K8sOptions) {
			o.Namespace, o.AllowPartial, o.ResultsInit, o.PullPolicy = "bench-b", true, "busybox:1.36", "IfNotPresent"
		}},
		{name: "no claim, no namespace", plan: apiPlan(t, 2, "load"), o: func(o *K8sOptions) { o.ResultsPVC = "" }},
		{name: "3 shards", plan: apiPlan(t, 3, "load"), o: func(o *K8sOptions) { o.Namespace = "bench-c" }},
		{name: "100 shards", plan: apiPlan(t, 100, "load"), o: func(o *K8sOptions) { o.Namespace = "bench-d" }},
		{name: "the longest name and run id", plan: apiPlan(t, 2, longName), o: func(o *K8sOptions) {
			o.Namespace, o.RunID, o.AllowPartial, o.ResultsInit = "bench-e", strings.Repeat("z", maxRunIDLen), true, "busybox:1.36"
		}},
		{name: "an API key", plan: apiPlan(t, 2, "load"), apiKey: true, o: func(o *K8sOptions) { o.Namespace = "bench-f" }},
	}
	for _, tc := range cases {
		o := testOptions()
		tc.o(&o)
		if tc.apiKey {
			tc.plan.APIKeyEnv = "OPENAI_API_KEY"
		}
		stream, n := writeStream(t, tc.plan, o)
		if o.Namespace != "" {
			c.createNamespace(ctx, t, stream, o.Namespace)
		}
		stdout, stderr, err := c.dryRun(ctx, stream)
		if err != nil {
			t.Errorf("%s: the API server refused the manifests (%v):\n%s", tc.name, err, stderr)
			continue
		}
		if strings.Contains(stderr, "Warning") {
			t.Errorf("%s: the API server warned:\n%s", tc.name, stderr)
		}
		if got := strings.Count(stdout, "(server dry run)"); got != n {
			t.Errorf("%s: %d objects accepted, want %d:\n%s", tc.name, got, n, stdout)
		}
	}

	t.Run("namespace not created first", func(t *testing.T) {
		o := testOptions()
		o.Namespace = "never-created"
		stream, _ := writeStream(t, apiPlan(t, 2, "load"), o)
		_, stderr, err := c.dryRun(ctx, stream)
		if err == nil || !strings.Contains(stderr, `namespaces "never-created" not found`) {
			t.Errorf("a dry run before the namespace exists: %v, %s; want it refused, as the header says", err, stderr)
		}
	})

	t.Run("results init under Pod Security restricted", func(t *testing.T) {
		o := testOptions()
		o.ResultsInit = "busybox:1.36"
		p := apiPlan(t, 2, "load")
		for _, level := range []string{"restricted", "baseline"} {
			o.Namespace = "psa-" + level
			ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
				ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
			if _, stderr, err := c.kubectl(ctx, mustYAML(t, ns), "apply", "-f", "-"); err != nil {
				t.Fatalf("namespace %s: %v\n%s", o.Namespace, err, stderr)
			}
			// No controller-manager makes the default ServiceAccount, which a pod needs to be admitted.
			if _, stderr, err := c.kubectl(ctx, nil, "-n", o.Namespace, "create", "serviceaccount", "default"); err != nil {
				t.Fatalf("service account in %s: %v\n%s", o.Namespace, err, stderr)
			}
			// The Jobs are admitted, with a warning at most (the stream without its Namespace object,
			// which would drop the label); the pods the Job controller makes from them are refused.
			inNS := o
			inNS.Namespace = ""
			stream, _ := writeStream(t, p, inNS)
			_, stderr, err := c.kubectl(ctx, stream, "-n", o.Namespace, "apply", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Errorf("the stream with --results-init in a %s namespace refused (%v):\n%s", level, err, stderr)
			}
			if warned := strings.Contains(stderr, `would violate PodSecurity "restricted`); warned != (level == "restricted") {
				t.Errorf("the stream in a %s namespace: Pod Security warning %v:\n%s", level, warned, stderr)
			}
			pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "shard-0", Namespace: o.Namespace},
				Spec:       newK8sRun(p, o).shardJob().Spec.Template.Spec}
			_, stderr, err = c.kubectl(ctx, mustYAML(t, pod), "create", "--dry-run=server", "-f", "-")
			switch level {
			case "restricted":
				if err == nil || !strings.Contains(stderr, `violates PodSecurity "restricted`) || !strings.Contains(stderr, "results-init") {
					t.Errorf("a shard pod with --results-init in a restricted namespace: %v, %s; want it refused, as the header says", err, stderr)
				}
			case "baseline":
				if err != nil {
					t.Errorf("a shard pod with --results-init in a baseline namespace refused (%v):\n%s", err, stderr)
				}
			}
		}
	})
}

func mustYAML(t *testing.T, obj any) []byte {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
