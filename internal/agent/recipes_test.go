package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A fenced block of a Markdown file: ```lang kind.
type block struct {
	file, lang, kind, text string
	line                   int
}

var fence = regexp.MustCompile("(?ms)^```([a-z]*)(?: ([a-z-]+))?\n(.*?)^```\n")

func blocks(t *testing.T, file string) []block {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	for _, m := range fence.FindAllSubmatchIndex(raw, -1) {
		b := block{file: file, lang: string(raw[m[2]:m[3]]), text: string(raw[m[6]:m[7]]), line: 1 + bytes.Count(raw[:m[0]], []byte("\n"))}
		if m[4] >= 0 {
			b.kind = string(raw[m[4]:m[5]])
		}
		out = append(out, b)
	}
	return out
}

func (b block) where() string { return fmt.Sprintf("%s:%d (```%s %s)", b.file, b.line, b.lang, b.kind) }

// Every YAML and JSON recipe in the README and docs/ is decoded strictly into the types of
// the tool it is for (Kubernetes' own API types; Consul's and Orchestrator's documented
// configuration keys); the HAProxy configuration passes haproxy -c; the ProxySQL SQL runs
// against ProxySQL's admin tables; every innowarm command line parses. A block of YAML or
// JSON that names no tool fails: nothing escapes the check.
func TestFleetRecipes(t *testing.T) {
	files := []string{"../../README.md"}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	checked := map[string]int{}
	for _, f := range files {
		for _, b := range blocks(t, f) {
			switch {
			case b.lang == "yaml" && b.kind == "kubernetes":
				checkKubernetes(t, b)
			case b.lang == "yaml" && b.kind == "kubernetes-container":
				var c corev1.Container
				if err := yaml.UnmarshalStrict([]byte(b.text), &c); err != nil {
					t.Errorf("%s: not a Kubernetes container: %v", b.where(), err)
				}
				checkInnowarmArgs(t, b, probeCommand(c.ReadinessProbe))
				if strings.Contains(c.Image, "innowarm") {
					checkInnowarmArgs(t, b, c.Args)
				}
			case b.lang == "yaml" && b.kind == "mariadb-operator-s3":
				checkMariaDBOperatorS3(t, b)
			case b.lang == "json" && b.kind == "aws-iam-policy":
				checkIAMPolicy(t, b)
			case b.lang == "json" && b.kind == "consul":
				checkConsul(t, b)
			case b.lang == "json" && b.kind == "orchestrator":
				checkOrchestrator(t, b)
			case b.lang == "haproxy":
				checkHAProxy(t, b)
			case b.lang == "sql" && b.kind == "proxysql":
				checkProxySQL(t, b)
			case b.lang == "yaml" || b.lang == "json":
				t.Errorf("%s: a %s block must say which tool it is for (kubernetes, kubernetes-container, consul, orchestrator, mariadb-operator-s3, aws-iam-policy), so that the test can check it", b.where(), b.lang)
				continue
			case b.lang == "sh" && strings.HasSuffix(f, "fleet.md"):
				for _, cmd := range shellCommands(b.text) {
					if len(cmd) > 0 && cmd[0] == "innowarm" {
						checkInnowarmArgs(t, b, cmd[1:])
					}
				}
			default:
				continue
			}
			checked[b.lang+" "+b.kind]++
		}
	}
	for _, want := range []string{"yaml kubernetes", "json consul", "json orchestrator", "haproxy ", "sql proxysql", "sh "} {
		if checked[want] == 0 {
			t.Errorf("no %q recipe found in the docs", want)
		}
	}
	t.Logf("checked: %v", checked)
}

func checkKubernetes(t *testing.T, b block) {
	t.Helper()
	for i, doc := range strings.Split(b.text, "\n---\n") {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Errorf("%s document %d: %v", b.where(), i, err)
			continue
		}
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 Pod":
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict([]byte(doc), &pod); err != nil {
				t.Errorf("%s: not a Pod: %v", b.where(), err)
				continue
			}
			checkSidecar(t, b, &pod.Spec)
		case "networking.k8s.io/v1 NetworkPolicy":
			var np networkingv1.NetworkPolicy
			if err := yaml.UnmarshalStrict([]byte(doc), &np); err != nil {
				t.Errorf("%s: not a NetworkPolicy: %v", b.where(), err)
			}
		default:
			t.Errorf("%s document %d: %s %s: no check for this kind", b.where(), i, meta.APIVersion, meta.Kind)
		}
	}
}

// checkSidecar: the agent is a native sidecar whose readiness probe asks /ready on the
// port it listens on, with flags innowarm accepts, and every mount names a volume.
func checkSidecar(t *testing.T, b block, spec *corev1.PodSpec) {
	t.Helper()
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	var agent *corev1.Container
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if len(c.Args) > 0 && c.Args[0] == "agent" {
			agent = c
		}
	}
	if agent == nil {
		t.Errorf("%s: no init container runs innowarm agent", b.where())
		return
	}
	if agent.RestartPolicy == nil || *agent.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("%s: the agent is not a native sidecar (restartPolicy: Always)", b.where())
	}
	p := agent.ReadinessProbe
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" {
		t.Fatalf("%s: the agent's readinessProbe is not httpGet /ready", b.where())
	}
	port := p.HTTPGet.Port.String()
	for _, cp := range agent.Ports {
		if cp.Name == port {
			port = fmt.Sprint(cp.ContainerPort)
		}
	}
	args := strings.Join(agent.Args, " ")
	if !strings.Contains(args, "--http-listen=$(POD_IP):"+port) {
		t.Errorf("%s: the probe asks port %s, the agent listens per %q", b.where(), port, args)
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: container %s mounts volume %s, which the pod does not define", b.where(), c.Name, m.Name)
			}
		}
	}
	// $(VAR) is the kubelet's expansion of the container's environment.
	var expanded []string
	for _, a := range agent.Args {
		expanded = append(expanded, strings.ReplaceAll(a, "$(POD_IP)", "10.1.2.3"))
	}
	checkInnowarmArgs(t, b, expanded)
}

func probeCommand(p *corev1.Probe) []string {
	if p == nil || p.Exec == nil || len(p.Exec.Command) == 0 || p.Exec.Command[0] != "innowarm" {
		return nil
	}
	return p.Exec.Command[1:]
}

// checkInnowarmArgs parses an innowarm command line with innowarm's own flags (--help after
// them: every flag must exist and take the value given).
func checkInnowarmArgs(t *testing.T, b block, args []string) {
	t.Helper()
	if len(args) == 0 {
		return
	}
	cmd := exec.Command(sandboxtest.Binary(t), append(append([]string{}, args...), "--help")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: innowarm %s: %v: %s", b.where(), strings.Join(args, " "), err, lastLine(string(out)))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// shellCommands splits a shell snippet into simple commands' words: continuation lines
// joined, comments and environment assignments dropped, cut at operators and redirections.
func shellCommands(text string) [][]string {
	var out [][]string
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
			line = line[:i]
		}
		var cur []string
		for _, w := range strings.Fields(line) {
			if isShellOperator(w) {
				if len(cur) > 0 {
					out = append(out, cur)
				}
				cur = nil
				continue
			}
			if len(cur) == 0 && strings.Contains(w, "=") && !strings.HasPrefix(w, "-") {
				continue // VAR=value before the command
			}
			cur = append(cur, w)
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

func isShellOperator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1":
		return true
	}
	return strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>")
}

// Consul's service definition and HTTP check, with the keys Consul documents for them (its
// configuration reference, "Service configuration" and "Health check configuration").
type consulCheck struct {
	ID                             string              `json:"id"`
	Name                           string              `json:"name"`
	Notes                          string              `json:"notes"`
	HTTP                           string              `json:"http"`
	Method                         string              `json:"method"`
	Header                         map[string][]string `json:"header"`
	Body                           string              `json:"body"`
	DisableRedirects               bool                `json:"disable_redirects"`
	Interval                       string              `json:"interval"`
	Timeout                        string              `json:"timeout"`
	TLSServerName                  string              `json:"tls_server_name"`
	TLSSkipVerify                  bool                `json:"tls_skip_verify"`
	SuccessBeforePassing           int                 `json:"success_before_passing"`
	FailuresBeforeWarning          int                 `json:"failures_before_warning"`
	FailuresBeforeCritical         int                 `json:"failures_before_critical"`
	DeregisterCriticalServiceAfter string              `json:"deregister_critical_service_after"`
	Status                         string              `json:"status"`
}

type consulService struct {
	Service struct {
		ID      string            `json:"id"`
		Name    string            `json:"name"`
		Tags    []string          `json:"tags"`
		Address string            `json:"address"`
		Port    int               `json:"port"`
		Meta    map[string]string `json:"meta"`
		Check   *consulCheck      `json:"check"`
		Checks  []consulCheck     `json:"checks"`
	} `json:"service"`
}

func strictJSON(text string, v any) error {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

func checkConsul(t *testing.T, b block) {
	t.Helper()
	var s consulService
	if err := strictJSON(b.text, &s); err != nil {
		t.Errorf("%s: not a Consul service definition: %v", b.where(), err)
		return
	}
	checks := s.Service.Checks
	if s.Service.Check != nil {
		checks = append(checks, *s.Service.Check)
	}
	if s.Service.Name == "" || len(checks) == 0 {
		t.Errorf("%s: a service with a name and a check, please", b.where())
	}
	for _, c := range checks {
		u, err := url.Parse(c.HTTP)
		if err != nil || u.Path != "/ready" {
			t.Errorf("%s: check %q asks %q, not the agent's /ready", b.where(), c.Name, c.HTTP)
			continue
		}
		if ip := net.ParseIP(u.Hostname()); u.Scheme != "https" && (ip == nil || !ip.IsLoopback()) {
			t.Errorf("%s: check %q: plain HTTP beyond loopback", b.where(), c.Name)
		}
		for _, d := range []string{c.Interval, c.Timeout} {
			if _, err := time.ParseDuration(d); err != nil {
				t.Errorf("%s: check %q: duration %q: %v", b.where(), c.Name, d, err)
			}
		}
	}
}

// Orchestrator's hook settings (go/config/config.go), and the placeholders it fills in a
// hook's command (go/logic/topology_recovery.go, prepareCommand).
type orchestratorHooks struct {
	OnFailureDetectionProcesses             []string
	PreGracefulTakeoverProcesses            []string
	PreFailoverProcesses                    []string
	PostFailoverProcesses                   []string
	PostUnsuccessfulFailoverProcesses       []string
	PostMasterFailoverProcesses             []string
	PostIntermediateMasterFailoverProcesses []string
	PostGracefulTakeoverProcesses           []string
	PostTakeMasterProcesses                 []string
}

var orchestratorPlaceholders = map[string]string{
	"failureType": "DeadMaster", "instanceType": "master", "isMaster": "true", "isCoMaster": "false",
	"failureDescription": "master cannot be reached", "command": "recover", "failedHost": "db1.example",
	"failedPort": "3306", "failureCluster": "db1.example:3306", "failureClusterAlias": "shop",
	"failureClusterDomain": "shop.example", "countSlaves": "2", "countReplicas": "2", "isDowntimed": "false",
	"autoMasterRecovery": "true", "autoIntermediateMasterRecovery": "true", "orchestratorHost": "orc1",
	"recoveryUID": "orc1:1", "isSuccessful": "true", "successorHost": "db2.example", "successorPort": "3306",
	"successorBinlogCoordinates": "mysql-bin.000042:4", "successorAlias": "db2", "lostSlaves": "",
	"lostReplicas": "", "countLostReplicas": "0", "slaveHosts": "db3.example:3306", "replicaHosts": "db3.example:3306",
}

var placeholder = regexp.MustCompile(`\{([A-Za-z]+)\}`)

func checkOrchestrator(t *testing.T, b block) {
	t.Helper()
	var h orchestratorHooks
	if err := strictJSON(b.text, &h); err != nil {
		t.Errorf("%s: not Orchestrator's hook settings: %v", b.where(), err)
		return
	}
	all := append(append(append([]string{}, h.PostFailoverProcesses...), h.PreFailoverProcesses...), h.PostMasterFailoverProcesses...)
	all = append(append(all, h.PostGracefulTakeoverProcesses...), h.OnFailureDetectionProcesses...)
	if len(all) == 0 {
		t.Errorf("%s: no hook", b.where())
	}
	usesSuccessor := false
	for _, cmd := range all {
		for _, m := range placeholder.FindAllStringSubmatch(cmd, -1) {
			if _, ok := orchestratorPlaceholders[m[1]]; !ok {
				t.Errorf("%s: {%s} is not a placeholder Orchestrator fills", b.where(), m[1])
			}
			usesSuccessor = usesSuccessor || m[1] == "successorHost"
		}
		filled := placeholder.ReplaceAllStringFunc(cmd, func(p string) string { return orchestratorPlaceholders[strings.Trim(p, "{}")] })
		filled = strings.TrimSuffix(strings.TrimSpace(filled), "&")
		// Orchestrator runs each hook with bash -c.
		if out, err := exec.Command("bash", "-n", "-c", filled).CombinedOutput(); err != nil {
			t.Errorf("%s: %q is not valid shell: %v: %s", b.where(), cmd, err, out)
		}
		for _, words := range shellCommands(filled) {
			for i, w := range words {
				if w == "innowarm" {
					checkInnowarmArgs(t, b, words[i+1:])
					break
				}
			}
		}
	}
	if !usesSuccessor {
		t.Errorf("%s: no hook uses {successorHost}", b.where())
	}
}

func checkHAProxy(t *testing.T, b block) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
	}
	f := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(f, []byte(b.text), 0o600); err != nil {
		t.Fatal(err)
	}
	// -c checks the configuration without binding its addresses.
	if out, err := exec.Command(bin, "-c", "-f", f).CombinedOutput(); err != nil || strings.Contains(string(out), "[WARNING]") {
		t.Errorf("%s: haproxy -c: %v:\n%s", b.where(), err, out)
	}
	if !strings.Contains(b.text, "agent-check") {
		t.Errorf("%s: no agent-check in the HAProxy recipe", b.where())
	}
}

func checkProxySQL(t *testing.T, b block) {
	t.Helper()
	admin := newProxySQLAdmin(t)
	admin.sql(t, b.text)
	rows := strings.TrimSpace(admin.sql(t, "SELECT filename, arg1, arg2, arg3 FROM scheduler"))
	f := strings.Split(rows, "\t")
	if len(f) != 4 || filepath.Base(f[0]) != filepath.Base(proxysqlScript) {
		t.Errorf("%s: the scheduler runs %q, not %s", b.where(), rows, filepath.Base(proxysqlScript))
	}
	if got := admin.commands(t); strings.Join(got, ";") != "LOAD SCHEDULER TO RUNTIME;SAVE SCHEDULER TO DISK" {
		t.Errorf("%s: admin commands %q", b.where(), got)
	}
}

type secretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// mariadb-operator's S3 block (api/v1alpha1, type S3), as a Backup's or Restore's
// .spec.storage.s3: the shape docs/object-storage.md maps onto innowarm's --s3-* flags.
type mariadbOperatorS3 struct {
	S3 struct {
		Bucket                      string        `json:"bucket"`
		Endpoint                    string        `json:"endpoint"`
		Region                      string        `json:"region"`
		Prefix                      string        `json:"prefix"`
		AccessKeyIDSecretKeyRef     *secretKeyRef `json:"accessKeyIdSecretKeyRef"`
		SecretAccessKeySecretKeyRef *secretKeyRef `json:"secretAccessKeySecretKeyRef"`
		SessionTokenSecretKeyRef    *secretKeyRef `json:"sessionTokenSecretKeyRef"`
		TLS                         *struct {
			Enabled        bool          `json:"enabled"`
			CASecretKeyRef *secretKeyRef `json:"caSecretKeyRef"`
		} `json:"tls"`
	} `json:"s3"`
}

func checkMariaDBOperatorS3(t *testing.T, b block) {
	t.Helper()
	var s mariadbOperatorS3
	if err := yaml.UnmarshalStrict([]byte(b.text), &s); err != nil {
		t.Errorf("%s: not mariadb-operator's S3 block: %v", b.where(), err)
		return
	}
	if s.S3.Bucket == "" || s.S3.Endpoint == "" {
		t.Errorf("%s: an S3 block needs a bucket and an endpoint", b.where())
	}
}

// An AWS IAM policy document (the IAM JSON policy reference) granting S3 actions only.
type iamPolicy struct {
	Version   string
	Statement []struct {
		Sid       string `json:",omitempty"`
		Effect    string
		Action    []string
		Resource  any
		Condition map[string]map[string]any `json:",omitempty"`
	}
}

func checkIAMPolicy(t *testing.T, b block) {
	t.Helper()
	var p iamPolicy
	if err := strictJSON(b.text, &p); err != nil {
		t.Errorf("%s: not an IAM policy document: %v", b.where(), err)
		return
	}
	if p.Version != "2012-10-17" || len(p.Statement) == 0 {
		t.Errorf("%s: policy version %q with %d statements", b.where(), p.Version, len(p.Statement))
	}
	for _, st := range p.Statement {
		if st.Effect != "Allow" && st.Effect != "Deny" {
			t.Errorf("%s: effect %q", b.where(), st.Effect)
		}
		for _, a := range st.Action {
			if !strings.HasPrefix(a, "s3:") {
				t.Errorf("%s: action %q is not an S3 action", b.where(), a)
			}
		}
	}
}
