// Evidence upload on a dispute's page (the CSP forbids inline script). The file goes from the
// browser straight to the document storage, never through Acme Pay:
// 1. POST {file_name, file_size, mime_type} to the page's ticket address (session cookie and
//    the X-CSRFToken header), which answers the upload ticket;
// 2. PUT the file to the ticket's upload_url with the ticket's headers and no credentials
//    (the browser sets Content-Length from the file itself);
// 3. POST the ticket's complete_url, then reload: the page lists the new item.
// Every refusal (400, 403, 404, 409, 413, 503) is shown in the form's aria-live region.
(function () {
  "use strict";

  var form = document.getElementById("evidence-upload");
  if (!form) {
    return;
  }
  var input = form.querySelector("input[type=file]");
  var button = form.querySelector("button[type=submit]");
  var status = form.querySelector("[data-upload-status]");
  var csrfToken = form.querySelector("input[name=csrf_token]").value;
  form.hidden = false;

  function show(message, isError) {
    status.textContent = message;
    status.className = isError ? "flash flash-error" : "muted";
  }

  function isJson(response) {
    return (response.headers.get("Content-Type") || "").indexOf("application/json") === 0;
  }

  // The answer's JSON when it is a success; otherwise an Error with the envelope's message.
  function checked(response) {
    if (response.ok && isJson(response) && !response.redirected) {
      return response.json();
    }
    var fallback = response.redirected
      ? "Your session has ended. Reload the page, sign in and try again."
      : "The upload failed (HTTP " + response.status + "). Reload the page and try again.";
    if (!isJson(response)) {
      return Promise.reject(new Error(fallback));
    }
    return response.json().then(function (body) {
      throw new Error((body.error && body.error.message) || fallback);
    });
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "X-CSRFToken": csrfToken
      },
      body: JSON.stringify(body || {})
    }).then(checked);
  }

  function send(ticket, file) {
    var headers = {};
    Object.keys(ticket.upload_headers).forEach(function (name) {
      if (name.toLowerCase() !== "content-length") {
        headers[name] = ticket.upload_headers[name];
      }
    });
    return fetch(ticket.upload_url, {
      method: ticket.upload_method,
      headers: headers,
      body: file,
      credentials: "omit"
    }).then(function (response) {
      if (response.ok) {
        return ticket;
      }
      if (isJson(response)) {
        return checked(response);
      }
      throw new Error("The document storage refused the file (HTTP " + response.status + ").");
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = input.files[0];
    if (!file) {
      show("Choose a file to upload.", true);
      input.focus();
      return;
    }
    button.disabled = true;
    show("Uploading " + file.name + "…", false);
    post(form.getAttribute("data-ticket-url"), {
      file_name: file.name,
      file_size: file.size,
      mime_type: file.type
    })
      .then(function (ticket) {
        return send(ticket, file);
      })
      .then(function (ticket) {
        return post(ticket.complete_url);
      })
      .then(function () {
        show(file.name + " is attached. Reloading the page…", false);
        window.location.reload();
      })
      .catch(function (error) {
        show(error.message, true);
        button.disabled = false;
      });
  });
})();
