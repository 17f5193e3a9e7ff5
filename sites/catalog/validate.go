package catalog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/tasks"
)

// ValidateSiteTasks loads the task files of a site definition's tasks:
// field and checks what loading does not: every oracle and wrong action
// parses, and, on the local backend, every setup and check program
// exists (webserv tasks validate). It returns the files read (nil when
// they do not load) and the number of tasks; the error joins every
// problem found, each naming its task.
func ValidateSiteTasks(s *hosting.Site) ([]tasks.SiteFile, int, error) {
	files, err := s.TaskFiles()
	if err != nil {
		return nil, 0, err
	}
	set, info, err := tasks.LoadSiteTasks(s.Name, files)
	if err != nil {
		return nil, 0, fmt.Errorf("site %s: %w", s.Name, err)
	}
	var errs []error
	for _, t := range set.Tasks {
		id := fmt.Sprintf("%s.%d", s.Name, t.ID)
		seqs := []struct {
			name    string
			actions []string
		}{{"oracle", t.Oracle}, {"wrong", t.Wrong}}
		for k, sol := range t.Solutions {
			seqs = append(seqs, struct {
				name    string
				actions []string
			}{fmt.Sprintf("solutions[%d]", k), sol})
		}
		for _, seq := range seqs {
			for k, a := range seq.actions {
				if _, err := envcore.ParseAction(a); err != nil {
					errs = append(errs, fmt.Errorf("task %s: %s[%d] %q: %w", id, seq.name, k, a, err))
				}
			}
		}
		// The project's own format types its answers (tasks.Task.RequireAnswerType);
		// a WebArena-Verified file's are typed by its own schema.
		if t.Eval.Verified == nil {
			if err := t.RequireAnswerType(); err != nil {
				errs = append(errs, fmt.Errorf("task %s: %w", id, err))
			}
		}
		if s.Local == nil {
			continue
		}
		var progs []string
		for _, c := range t.Setup {
			progs = append(progs, c[0])
		}
		if t.Eval.Check != nil {
			progs = append(progs, t.Eval.Check.Command[0])
		}
		for _, p := range progs {
			if err := localProgram(s, p); err != nil {
				errs = append(errs, fmt.Errorf("task %s: %w", id, err))
			}
		}
	}
	return info, len(set.Tasks), errors.Join(errs...)
}

// localProgram checks that a local-backend command's program exists: a
// path with a slash relative to the definition, else on $PATH.
func localProgram(s *hosting.Site, p string) error {
	if !strings.ContainsRune(p, '/') {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("program %q is not on $PATH", p)
		}
		return nil
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(s.Dir(), p)
	}
	st, err := os.Stat(full)
	if err != nil {
		return fmt.Errorf("program %s: %w (paths with a slash are relative to the site definition)", p, err)
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("program %s is not executable (chmod +x it, with a #! line)", full)
	}
	return nil
}
