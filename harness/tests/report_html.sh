#!/bin/sh
# report_html.sh MLACHECK: index.html of a failing run (an injected fault: failure groups, ringed
# points, first-divergence marks) rendered by headless Chromium at 1280 px: every plot listed in
# plots/plots.txt is on the page, every image loaded (naturalWidth > 0) and displayed at least
# 600 px wide, and a click on a plot opens its SVG. The page is measured by a script appended to a
# copy of index.html (probe.html), which writes its findings into the DOM that --dump-dom prints.
# Exit 77 (skipped) only when chromium is not installed (.ci/run installs chromium).
set -u
MLA=$1
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "SKIP: chromium not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$MLA" run --suite smoke --inject rope-pairing --results "$T/r" --quiet >"$T/out" 2>&1
[ $? -eq 1 ] || { cat "$T/out"; fail "smoke with rope-pairing: expected exit 1"; }
R=$(ls -d "$T"/r/*/)
[ -s "$R/plots/plots.txt" ] || fail "no plots rendered: $(cat "$R"/plots/gnuplot.log 2>/dev/null | head -3)"
want=$(wc -l <"$R/plots/plots.txt")
grep -q '<h2>Failures by first divergence: ' "$R/index.html" || fail "index.html: no failure groups"
sed 's|</body></html>||' "$R/index.html" >"$R/probe.html"
cat >>"$R/probe.html" <<'JS'
<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('img').forEach(function (im) {
    var a = im.closest('a');
    out.push('IMG ' + im.getAttribute('src') + ' width=' + Math.round(im.getBoundingClientRect().width) +
             ' natural=' + im.naturalWidth + ' complete=' + im.complete +
             ' link=' + (a ? a.getAttribute('href') : 'none'));
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = 'PROBE-BEGIN\n' + out.join('\n') + '\nPROBE-END';
  document.body.appendChild(pre);
});
</script></body></html>
JS
# --no-sandbox: CI runs as root; virtual time lets the images load before the DOM is dumped
# (its own profile folder: CI's HOME may be unset or read-only)
timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --allow-file-access-from-files --window-size=1280,1000 \
    --user-data-dir="$T/profile" --virtual-time-budget=10000 --dump-dom "file://$R/probe.html" >"$T/dom" 2>"$T/chrome.log" ||
    { tail -5 "$T/chrome.log"; fail "chromium failed"; }
sed -n '/PROBE-BEGIN/,/PROBE-END/p' "$T/dom" | grep '^IMG ' >"$T/imgs" || { tail -5 "$T/chrome.log"; fail "probe found no images"; }
cat "$T/imgs"
n=$(wc -l <"$T/imgs")
[ "$n" -eq "$want" ] || fail "$n images on the page, $want plots listed in plots.txt"
sed 's|^IMG src=||' "$T/imgs" | awk '{ split($3, w, "="); split($4, nw, "="); split($6, l, "=");
       if (w[2] < 600) { print "FAIL: " $2 " displayed " w[2] " px wide (< 600)"; bad = 1 }
       if (nw[2] <= 0) { print "FAIL: " $2 " did not load"; bad = 1 }
       if (l[2] != $2) { print "FAIL: " $2 " links to " l[2] ", not its SVG"; bad = 1 }
       if (min == "" || w[2] + 0 < min + 0) min = w[2] }
     END { if (!bad) print "report_html: " NR " plots, narrowest displayed " min " px"; exit bad }'
