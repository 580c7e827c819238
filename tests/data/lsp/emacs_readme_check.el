;;; emacs_readme_check.el --- run by tests/test_lsp_emacs.py after the README's eglot snippet  -*- lexical-binding: t -*-
;; Opens $CUDALENS_FILE (the snippet's mode and hook start eglot), waits for the cudalens
;; server, asks it for the buffer's code lenses and the code actions on the kernel, prints
;; "mode: ...", "server: ...", "lens: LINE: TITLE" and "action: TITLE" lines and exits 0; on a
;; failure prints "FAIL: reason" and exits 1.

(require 'eglot)

(defun cudalens-check--fail (fmt &rest args)
  (princ (concat "FAIL: " (apply #'format fmt args) "\n"))
  (kill-emacs 1))

(defun cudalens-check--wait (pred seconds what)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (unless (funcall pred) (cudalens-check--fail "timed out after %s s waiting for %s" seconds what))))

(condition-case err
    (progn
      (find-file (getenv "CUDALENS_FILE"))
      (princ (format "mode: %s\n" major-mode))
      ;; eglot-ensure connects after the current command: batch Emacs has no command loop
      (run-hooks 'post-command-hook)
      (cudalens-check--wait (lambda () (eglot-current-server)) 60 "the eglot server")
      (let* ((server (eglot-current-server))
             (doc (eglot--TextDocumentIdentifier)))
        (princ (format "server: %s\n" (plist-get (eglot--server-info server) :name)))
        (seq-doseq (lens (jsonrpc-request server :textDocument/codeLens (list :textDocument doc)))
          (princ (format "lens: %s: %s\n"
                         (plist-get (plist-get (plist-get lens :range) :start) :line)
                         (plist-get (plist-get lens :command) :title))))
        (let ((pos (list :line 4 :character 4)))
          (seq-doseq (action (jsonrpc-request
                              server :textDocument/codeAction
                              (list :textDocument doc :range (list :start pos :end pos)
                                    :context (list :diagnostics []))))
            (princ (format "action: %s\n" (plist-get action :title)))))
        (eglot-shutdown server))
      (kill-emacs 0))
  (error (cudalens-check--fail "%S" err)))
