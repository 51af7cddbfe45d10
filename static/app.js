// Dashboard behaviour without inline scripts (the CSP forbids them).
document.addEventListener("click", function (event) {
  // A copy button copies its field's value, or its own data-copy-text (a list's short id),
  // then says so in the page's language (data-copied).
  var copy = event.target.closest("[data-copy-target], [data-copy-text]");
  if (copy) {
    var text = copy.dataset.copyText;
    if (text === undefined) {
      var field = document.getElementById(copy.dataset.copyTarget);
      field.select();
      text = field.value;
    }
    navigator.clipboard.writeText(text).then(function () {
      copy.textContent = copy.dataset.copied || "Copied";
    });
  }
});
// A button with data-confirm asks first, but only about a form that is complete: a missing
// required field goes straight to the server, whose answer says what is missing.
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  if (!button || !button.dataset.confirm || !event.target.checkValidity()) {
    return;
  }
  if (!window.confirm(button.dataset.confirm)) {
    event.preventDefault();
  }
});
