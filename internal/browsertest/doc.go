// Package browsertest holds lbkit's tests that drive a real headless
// browser (Debian's chromium, through chromedp): what a person sees on the
// debug page of package conn/debugpage. It is its own module so that the
// core module does not depend on chromedp. The tests skip, saying why, when
// no chromium is installed; .ci/run installs it.
package browsertest
