// Starts Swagger UI from a file rather than an inline script, so the page keeps a strict CSP.
window.addEventListener("load", function () {
  var container = document.getElementById("swagger-ui-container");
  window.ui = SwaggerUIBundle({ url: container.dataset.specUrl, dom_id: "#swagger-ui-container" });
});
