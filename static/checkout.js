// Hosted checkout behaviour (the CSP forbids inline script): countdown, status polling and
// the copy button. The server's seconds_left drives the countdown, so a payer's wrong clock
// cannot show a wrong time; when it reaches zero the page polls at once (expiry on read).
(function () {
  "use strict";

  var POLL_MS = 3000;
  var FINAL = ["paid", "expired", "failed", "cancelled", "refunded", "disputed"];
  var HIDES_PAYMENT = ["paid", "expired", "failed", "cancelled", "refunded", "processing",
    "disputed"];

  var root = document.getElementById("checkout");
  if (!root) {
    return;
  }
  var labels = JSON.parse(root.getAttribute("data-status-labels") || "{}");
  var statusUrl = root.getAttribute("data-status-url");
  var status = root.getAttribute("data-status");
  var deadline = Date.now() + Number(root.getAttribute("data-seconds-left") || 0) * 1000;
  var countdown = root.querySelector("[data-countdown]");
  var pollTimer = null;
  var tickTimer = null;
  var polling = false;
  var polledAtZero = false;

  function isFinal(value) {
    return FINAL.indexOf(value) !== -1;
  }

  function pad(number) {
    return (number < 10 ? "0" : "") + number;
  }

  function format(seconds) {
    var hours = Math.floor(seconds / 3600);
    var minutes = Math.floor((seconds % 3600) / 60);
    var rest = seconds % 60;
    return (hours ? pad(hours) + ":" : "") + pad(minutes) + ":" + pad(rest);
  }

  function secondsLeft() {
    return Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
  }

  function tick() {
    if (!countdown || status !== "pending") {
      return;
    }
    var left = secondsLeft();
    countdown.textContent = format(left);
    if (left === 0 && !polledAtZero) {
      polledAtZero = true;
      poll();
    }
  }

  function showState(value) {
    var blocks = root.querySelectorAll("[data-state]");
    for (var i = 0; i < blocks.length; i += 1) {
      var block = blocks[i];
      var name = block.getAttribute("data-state");
      block.hidden = name === "pending" ? HIDES_PAYMENT.indexOf(value) !== -1 : name !== value;
    }
  }

  function applyStatus(value) {
    if (value === status) {
      return;
    }
    var region = root.querySelector("[data-status-region]");
    region.className = region.className.replace(/\bstatus-[a-z]+\b/, "status-" + value);
    root.querySelector("[data-status-text]").textContent = labels[value] || value;
    root.setAttribute("data-status", value);
    status = value;
    showState(value);
    if (isFinal(value)) {
      window.clearInterval(tickTimer);
    }
  }

  function resync(seconds) {
    var target = Date.now() + seconds * 1000;
    if (Math.abs(target - deadline) > 2000) {
      deadline = target;
    }
  }

  function schedule() {
    window.clearTimeout(pollTimer);
    if (!isFinal(status)) {
      pollTimer = window.setTimeout(poll, POLL_MS);
    }
  }

  function poll() {
    if (polling || isFinal(status) || !window.fetch) {
      return;
    }
    if (document.hidden && !(status === "pending" && secondsLeft() === 0)) {
      schedule();
      return;
    }
    polling = true;
    window.fetch(statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (body) {
        if (body) {
          resync(body.seconds_left);
          applyStatus(body.status);
        }
      })
      .catch(function () {
        return null;
      })
      .then(function () {
        polling = false;
        schedule();
      });
  }

  function copyCode(button) {
    var field = document.getElementById(button.getAttribute("data-copy-target"));
    var label = button.textContent;
    var done = function () {
      button.textContent = button.dataset.copied || "Copied";
      window.setTimeout(function () {
        button.textContent = label;
      }, 2000);
    };
    var fallback = function () {
      field.focus();
      field.select();
      field.setSelectionRange(0, field.value.length);
      try {
        if (document.execCommand("copy")) {
          done();
        }
      } catch (error) {
        // The code stays selected, so the payer can copy it by hand.
      }
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, fallback);
    } else {
      fallback();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy-target]") : null;
    if (button) {
      copyCode(button);
    }
  });

  // The sandbox's Simulate payment buttons post in the background, so the payer's page
  // turns paid the way a real payment shows up: by the status poll, without a reload. A
  // failed request falls back to posting the form.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute("data-simulate") || !window.fetch || !window.FormData) {
      return;
    }
    event.preventDefault();
    var buttons = root.querySelectorAll("form[data-simulate] button");
    for (var i = 0; i < buttons.length; i += 1) {
      buttons[i].disabled = true;
    }
    window.fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (response) {
        return response.ok;
      }, function () {
        return false;
      })
      .then(function (posted) {
        if (!posted) {
          form.submit();
          return;
        }
        window.clearTimeout(pollTimer);
        poll();
      });
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      poll();
    }
  });

  if (!isFinal(status)) {
    tick();
    tickTimer = window.setInterval(tick, 1000);
    schedule();
  }
})();
