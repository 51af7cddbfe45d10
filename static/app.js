// Dashboard behaviour without inline scripts (the CSP forbids them).
document.addEventListener("click", function (event) {
  var copy = event.target.closest("[data-copy-target]");
  if (copy) {
    var field = document.getElementById(copy.dataset.copyTarget);
    field.select();
    navigator.clipboard.writeText(field.value).then(function () {
      copy.textContent = "Copied";
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
