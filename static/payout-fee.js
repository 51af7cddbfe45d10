// The payout form's fee line: as the amount is typed, the server says what the payout costs
// (GET data-fee-url?amount=…, the same fee rule the request applies); an empty amount shows
// the rule again. Only the latest answer is shown.
(function () {
  var line = document.getElementById("payout-fee");
  var amount = document.getElementById("amount");
  if (!line || !amount) {
    return;
  }
  var timer = null;
  var asked = 0;
  amount.addEventListener("input", function () {
    window.clearTimeout(timer);
    timer = window.setTimeout(function () {
      var typed = amount.value.trim();
      var ask = ++asked;
      if (!typed) {
        line.textContent = line.dataset.rule;
        return;
      }
      var url = line.dataset.feeUrl + "&amount=" + encodeURIComponent(typed);
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (answer) {
          if (answer && ask === asked) {
            line.textContent = answer.text;
          }
        });
    }, 250);
  });
})();
