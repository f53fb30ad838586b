package hostproc

import (
	"bytes"
	"strings"

	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/sampler"
)

// cgroupJob reads a /proc/PID/cgroup file, cgroup v1 ("4:memory:/docker/<id>")
// or v2 ("0::/system.slice/docker-<id>.scope"), and returns what it says the
// process belongs to: a Slurm job and step, a Kubernetes pod (UID and QoS
// class), a container (Docker, containerd, CRI-O, Podman). Nil when it names
// none of them (a login session, a system service).
//
// Of a v1 file's hierarchies the first line naming a job wins; they all name
// the same one where there is one. Whoever may create a cgroup directory
// names it: the path is made inert before it is read.
func cgroupJob(b []byte) *sampler.Job {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		// hierarchy-ID:controllers:path; the path may contain ':'.
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		j := bytes.IndexByte(line[i+1:], ':')
		if j < 0 {
			continue
		}
		if job := cgroupPathJob(inert.Bytes(line[i+1+j+1:])); job != nil {
			return job
		}
	}
	return nil
}

// cgroupPathJob reads one cgroup path.
func cgroupPathJob(path string) *sampler.Job {
	var job sampler.Job
	elems := strings.Split(strings.Trim(path, "/"), "/")
	slurm, kube := false, false
	for i, e := range elems {
		switch {
		case strings.HasPrefix(e, "slurm"):
			// slurmstepd.scope (v2), slurm or slurm_<node> (v1).
			slurm = true
		case slurm && strings.HasPrefix(e, "job_") && isDecimal(e[4:]):
			job.SlurmJobID = e[4:]
		case slurm && job.SlurmJobID != "" && job.SlurmStep == "" && strings.HasPrefix(e, "step_") && len(e) > 5:
			job.SlurmStep = e[5:]
		case e == "kubepods" || e == "kubepods.slice":
			kube = true
		case kube:
			kubeElem(&job, e)
		}
		if id, rt, ok := containerElem(e, elems[:i]); ok {
			// The innermost container wins (a container in a pod).
			job.ContainerID, job.Runtime = id, rt
		}
	}
	if job == (sampler.Job{}) {
		return nil
	}
	if job.K8sPodUID != "" && job.K8sQOS == "" {
		// A pod directly under kubepods is of the guaranteed class.
		job.K8sQOS = "guaranteed"
	}
	return &job
}

// kubeElem reads one path element below kubepods: the QoS class
// ("burstable", "kubepods-burstable.slice") or the pod
// ("pod<uid>", "kubepods-burstable-pod<uid with _ for ->.slice").
func kubeElem(job *sampler.Job, e string) {
	e = strings.TrimSuffix(e, ".slice")
	if rest, ok := strings.CutPrefix(e, "kubepods-"); ok {
		e = rest
	}
	for _, q := range []string{"besteffort", "burstable"} {
		if e == q {
			job.K8sQOS = q
			return
		}
		if rest, ok := strings.CutPrefix(e, q+"-"); ok {
			job.K8sQOS = q
			e = rest
		}
	}
	if uid, ok := strings.CutPrefix(e, "pod"); ok && uid != "" && job.K8sPodUID == "" {
		// The systemd driver writes the UID's dashes as underscores.
		job.K8sPodUID = strings.ReplaceAll(uid, "_", "-")
	}
}

// containerRuntimes maps the prefix of a container's cgroup directory
// (systemd scope units) to its runtime.
var containerRuntimes = []struct{ prefix, runtime string }{
	{"docker-", "docker"},
	{"cri-containerd-", "containerd"},
	{"containerd-", "containerd"},
	{"nerdctl-", "containerd"},
	{"crio-", "crio"},
	{"libpod-", "podman"},
}

// containerElem reports whether a path element names a container: a 64-hex
// id, bare ("/docker/<id>", "/kubepods/burstable/pod…/<id>") or in a scope
// named for its runtime ("docker-<id>.scope"). parents are the elements
// above it, which name the runtime of a bare id.
func containerElem(e string, parents []string) (id, runtime string, ok bool) {
	e = strings.TrimSuffix(e, ".scope")
	if isHex64(e) {
		if len(parents) > 0 {
			switch parents[len(parents)-1] {
			case "docker":
				runtime = "docker"
			case "libpod_parent":
				runtime = "podman"
			}
		}
		return e, runtime, true
	}
	for _, r := range containerRuntimes {
		if rest, ok := strings.CutPrefix(e, r.prefix); ok && isHex64(rest) {
			return rest, r.runtime, true
		}
	}
	return "", "", false
}

func shortContainerID(j *sampler.Job) string {
	if j == nil || len(j.ContainerID) < 12 {
		return ""
	}
	return j.ContainerID[:12]
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
