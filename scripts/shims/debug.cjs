// Bundle-time stand-in for the `debug` package inside mqtt-packet and MQTT.js: their trace output
// is never enabled by MAM's bins, and the real module costs a tty/colour probe at every start.
// Set MAM_BUILD_KEEP_DEBUG=1 when building to keep the real one.
function createDebug() {
  const noop = () => {};
  noop.enabled = false;
  noop.extend = createDebug;
  return noop;
}
createDebug.enable = () => {};
createDebug.disable = () => '';
createDebug.enabled = () => false;
module.exports = createDebug;
module.exports.default = createDebug;
