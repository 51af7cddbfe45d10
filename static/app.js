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
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  if (button && button.dataset.confirm && !window.confirm(button.dataset.confirm)) {
    event.preventDefault();
  }
});
