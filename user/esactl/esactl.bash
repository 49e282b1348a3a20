# bash completion for esactl(8)
_esactl()
{
	local cur prev words cword obj cmd
	_init_completion || return
	local i=1
	case $prev in
	-n|-netns|--netns)
		COMPREPLY=($(compgen -W "$(ls /run/netns 2>/dev/null)" -- "$cur")); return ;;
	-b|-batch|--batch|-d|-dir|--dir)
		_filedir; return ;;
	esac
	while [[ $i -lt $cword && ${words[i]} == -* ]]; do
		[[ ${words[i]} == -[dnb]* || ${words[i]} == --[dnb]* ]] && ((i++))
		((i++))
	done
	if [[ $i -eq $cword ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-json -pretty -verbose -dir -netns -batch -Version -help' -- "$cur"))
		else
			COMPREPLY=($(compgen -W 'prog dev job stats pool monitor status help' -- "$cur"))
		fi
		return
	fi
	obj=${words[i]}
	cmd=${words[i + 1]}
	if [[ $((i + 1)) -eq $cword ]]; then
		case $obj in
		prog) COMPREPLY=($(compgen -W 'load unload show help' -- "$cur")) ;;
		dev) COMPREPLY=($(compgen -W 'attach detach show help' -- "$cur")) ;;
		job) COMPREPLY=($(compgen -W 'add delete set show flush help' -- "$cur")) ;;
		stats) COMPREPLY=($(compgen -W 'show reset help' -- "$cur")) ;;
		pool) COMPREPLY=($(compgen -W 'show help' -- "$cur")) ;;
		esac
		return
	fi
	case $obj:$cmd:$prev in
	prog:load:policy) COMPREPLY=($(compgen -W 'esa atp switchml' -- "$cur")); return ;;
	prog:load:mode) COMPREPLY=($(compgen -W 'auto maps kfunc' -- "$cur")); return ;;
	prog:load:ps-copy|prog:load:udp-csum) COMPREPLY=($(compgen -W 'on off' -- "$cur")); return ;;
	prog:load:*) COMPREPLY=($(compgen -W 'port values slots jobs policy stale addr mode ps-copy udp-csum' -- "$cur")); return ;;
	dev:attach:mode) COMPREPLY=($(compgen -W 'native generic' -- "$cur")); return ;;
	dev:attach:attach|dev:detach:detach)
		COMPREPLY=($(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur")); return ;;
	dev:attach:*) COMPREPLY=($(compgen -W 'mode' -- "$cur")); return ;;
	job:add:region) COMPREPLY=($(compgen -W 'auto' -- "$cur")); return ;;
	job:add:*) [[ $cword -gt $((i + 2)) ]] &&
		COMPREPLY=($(compgen -W 'ps workers leaves upstream ranks max-prio lease region' -- "$cur")); return ;;
	job:set:*) COMPREPLY=($(compgen -W 'max-prio' -- "$cur")); return ;;
	stats:show:-o) COMPREPLY=($(compgen -W 'text prom' -- "$cur")); return ;;
	stats:show:file) _filedir; return ;;
	stats:show:*) COMPREPLY=($(compgen -W 'job -o file' -- "$cur")); return ;;
	pool:show:*) COMPREPLY=($(compgen -W 'slot' -- "$cur")); return ;;
	esac
}
complete -F _esactl esactl
